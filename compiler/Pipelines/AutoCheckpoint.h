//===- AutoCheckpoint.h - --ckpt=auto: recompute only what the budget needs -===//
//
// `--ckpt=auto --mem-budget=SIZE` chooses how much to recompute: none if the
// plan fits as is, else the fewest blocks, taken in model order, whose
// recomputation brings the planned per-rank peak under the budget. Each
// candidate is a real plan of the model (compiler/Pipelines/MemoryBudget.h),
// so the choice is measured, not estimated.
//
// Why this is the optimum for the models FSDP trains: their blocks are
// repeated (identical shapes and ops), so every block saves the same
// activation bytes and costs the same recomputation, and the least added
// compute that fits is the smallest count that fits. Which blocks matters
// for the peak: the first blocks' activations are held the longest and
// their recomputation runs late in the backward pass, after the peak at the
// forward/backward turn, so they are given up first. The search is a
// binary search over the count (the peak falls monotonically with it), a
// handful of compiles. For chains of unequal blocks a Rotor-style dynamic
// program over per-block costs would do better; it is not built.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_AUTOCHECKPOINT_H
#define FSDP_COMPILER_PIPELINES_AUTOCHECKPOINT_H

#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fsdp {

struct CheckpointChoice {
  CompileOptions opts; // ckpt none, or blocks with ckptBlocks set
  std::string summary; // one line for the user: what was chosen and why
};

/// Resolves --ckpt=auto in `opts` (which must carry --mem-budget) by
/// planning `imported` (the module before any stage; it is not changed).
/// When even recomputing every block does not fit, the choice is all
/// blocks; the budget check then reports the overflow and alternatives.
mlir::FailureOr<CheckpointChoice> chooseCheckpointing(mlir::ModuleOp imported,
                                                      const CompileOptions &opts);

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_AUTOCHECKPOINT_H
