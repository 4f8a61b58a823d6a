//===- AutoAccumulation.h - --accum-reduce=auto ---------------------------===//
//
// Chooses, per unit, how --grad-accum's micro-batches accumulate its
// gradient (compiler/Transforms/AccumulateMicroBatches.h): `last` (one
// reduction per step instead of K, for an unsharded flat accumulator held
// across micro-batches) wherever it fits --mem-budget, else `each`. Without
// a budget every unit is `last`: nothing limits memory, so the least
// communication wins. With one, the all-`each` plan is planned first; the
// units whose `last` saves the most predicted time per extra byte
// (compiler/Analysis/AccumulationCost.h) take `last` while their extra
// accumulator bytes fit the budget's headroom, and the result is planned
// again to confirm it fits (dropping the last unit taken while it does not).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_PIPELINES_AUTOACCUMULATION_H
#define FSDP_COMPILER_PIPELINES_AUTOACCUMULATION_H

#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fsdp {

struct AccumulationChoice {
  CompileOptions opts; // accumReduce each or last, accumLastUnits set under auto
  std::string summary; // one line for the user: what was chosen and why
};

/// Resolves --accum-reduce=auto in `opts` by planning `imported` (the
/// module before any stage; it is not changed).
mlir::FailureOr<AccumulationChoice> chooseAccumulation(mlir::ModuleOp imported,
                                                       const CompileOptions &opts);

} // namespace fsdp

#endif // FSDP_COMPILER_PIPELINES_AUTOACCUMULATION_H
