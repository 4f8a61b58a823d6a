//===- UnscaleGradients.h - fp16 dynamic loss scaling: unscale, skip ------===//
//
// The gradient half of torch.amp.GradScaler (--param-dtype=f16), on the
// sharded @train_step whose backward pass was seeded with the loss scale
// (fsdp-build-train-step{loss-scale}): every optimizer update's reduced
// gradient shard is multiplied by the reciprocal scale (an f32 argument
// `nn.inv_loss_scale` the runtime writes), each rank flags whether any of
// its unscaled gradients is inf or NaN, one all-reduce combines the flags
// over the world, and every update takes the flag as its `skip_if`
// operand, so a step with an overflow changes no parameter or state. The
// flag is also returned (`nn.found_inf`, output "found_inf"): the runtime
// adjusts the scale from it (runtime/train/LossScaler.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_UNSCALEGRADIENTS_H
#define FSDP_COMPILER_TRANSFORMS_UNSCALEGRADIENTS_H

#include "mlir/IR/BuiltinOps.h"

namespace fsdp {

/// The name of the found-inf output of a loss-scaled step.
inline constexpr const char *kFoundInfOutput = "found_inf";

/// Unscales the gradients of the step's optimizer updates and makes them
/// skip on inf/NaN. Fails without a loss-scale argument or updates, or when
/// the step is already unscaled.
mlir::LogicalResult unscaleGradients(mlir::ModuleOp module);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_UNSCALEGRADIENTS_H
