//===- AccumulateMicroBatches.h - gradient accumulation in the step -------===//
//
// `--grad-accum=K` (docs/design.md, data contract): one optimizer step runs
// K micro-batches. The stage runs on the sharded @train_step, right after
// fsdp-shard-parameters, and unrolls its forward and backward K times in
// sequence, each micro-batch on its own b rows of an input binding of K*b
// rows (so activation memory stays one micro-batch's). Per flat group the
// gradient is accumulated one of two ways:
//   each  every micro-batch's gradient is reduced (reduce-scatter, or
//         all-reduce under --shard=none) and the reduced shards are summed:
//         only a shard-sized accumulator lives across micro-batches
//         (FSDP2's default);
//   last  the unsharded flat gradient is summed locally over the
//         micro-batches and reduced once after the last one: one reduction
//         instead of K, for a full flat buffer held across micro-batches
//         (torch's no_sync).
// Either way the sum is scaled by 1/K, as torch's K backward passes of
// loss/K accumulate it, and the step's loss is the mean of the K
// micro-batch losses (then averaged over ranks as before). One optimizer
// update per flat group remains, reading the final accumulated gradient
// shard, which is what later gradient passes (loss scaling, clipping)
// rewrite. With K = 1 the stage is not run at all.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_ACCUMULATEMICROBATCHES_H
#define FSDP_COMPILER_TRANSFORMS_ACCUMULATEMICROBATCHES_H

#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdp {

struct AccumulateOptions {
  int64_t microBatches = 1; // K
  /// How every group accumulates, except those named in lastUnits, which
  /// accumulate unsharded (`last`) whatever this says.
  AccumReduceKind reduce = AccumReduceKind::Each;
  std::vector<std::string> lastUnits;
};

mlir::LogicalResult accumulateMicroBatches(mlir::ModuleOp module,
                                           const AccumulateOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_ACCUMULATEMICROBATCHES_H
