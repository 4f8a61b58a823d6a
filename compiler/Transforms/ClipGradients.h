//===- ClipGradients.h - gradient norm clipping before the optimizer ------===//
//
// `--clip-grad-norm=MAX [--clip-norm-type=2|inf]` and `--log-grad-norm`:
// torch.nn.utils.clip_grad_norm_ over every trained parameter, compiled into
// the step. The total norm is the 2-norm (or the largest |g|) of all
// gradients together; every gradient is multiplied by
// min(1, MAX / (norm + 1e-6)) before its optimizer update, and the norm is a
// step output ("grad_norm") that fsdp-run logs. On a sharded step the norm
// is computed the way FSDP computes it: each rank's partial sum of squares
// (or max) over its gradient shards, then one all-reduce over the shard
// group. Under --shard=none, where each rank holds every gradient, the step
// sums the same per-rank chunks in the same rank order as a sharded step of
// that world size, so the strategies stay bitwise equal (with
// fsdp-shard-parameters' `align-shards`, which gives full and grad-op the
// same shards).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_CLIPGRADIENTS_H
#define FSDP_COMPILER_TRANSFORMS_CLIPGRADIENTS_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/StringRef.h"

namespace fsdp {

/// The name of the step output holding the total gradient norm.
inline constexpr llvm::StringLiteral kGradNormOutput = "grad_norm";

struct ClipOptions {
  /// The largest total norm the update sees; 0 computes and outputs the
  /// norm without clipping (--log-grad-norm).
  double maxNorm = 0;
  /// The infinity norm (max |g|) instead of the 2-norm.
  bool infNorm = false;
};

/// Rewrites every optimizer update's gradient in @train_step (sharded or
/// not) and adds the "grad_norm" output.
mlir::LogicalResult clipGradients(mlir::ModuleOp module, const ClipOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_CLIPGRADIENTS_H
