//===- AutoCheckpoint.h - --ckpt=auto: recompute only what the budget needs -===//
//
// `--ckpt=auto --mem-budget=SIZE` chooses which blocks to recompute: none
// if the plan fits as is, else a set of blocks of least added recompute
// cost whose plan fits the budget.
//
// How: the recompute pass prices every block without rewriting any
// (compiler/Transforms/RecomputeActivations.h: the activation bytes it
// holds, those checkpointing it frees, and the forward ops it would clone
// priced by the cost model on --device). A dynamic program over the block
// chain (compiler/Analysis/CheckpointSolver.h, Rotor's peak model with one
// recomputation per block) picks the cheapest set whose modelled
// activations fit what the budget leaves for them, at the forward/backward
// turn and at each block's backward. What the step holds besides block
// activations (parameters, gradients, optimizer state, the loss and
// embedding activations, gradients in flight) is taken from two real
// plans (compiler/Pipelines/MemoryBudget.h): the plan without
// checkpointing, whose peak is at the turn, and the plan checkpointing
// every block, which is also the proof that some set fits. The chosen set
// is then planned for real; when that plan still misses the budget, the
// miss is taken off both capacities and the program solved again, a few
// times at most. The returned choice and its peak are always a real
// plan's.
//
// How close to optimal: for the peak model, exactly optimal (the unit
// test checks the program against every subset of random unequal chains;
// only chains past kMaxChainStates frontier states are approximated); for
// the real plan, as close as the model is to the planner. The model leaves
// out what the planner sees: elementwise fusion (fewer, larger buffers),
// arena fragmentation, rest-of-step bytes that differ from block to block
// (it has one number for the turn and one for all backward points), and
// where exactly each recomputation is placed.
// Tightening corrects misses towards "fits"; a model too pessimistic can
// leave a cheaper fitting set unfound. Rotor's schedules that recompute a
// block more than once, or checkpoint inside a block, are outside what the
// recompute pass can do and so outside the search.
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
/// When no set of blocks fits, the choice is all blocks; the budget check
/// then reports the overflow and alternatives.
mlir::FailureOr<CheckpointChoice> chooseCheckpointing(mlir::ModuleOp imported,
                                                      const CompileOptions &opts);

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_AUTOCHECKPOINT_H
