//===- BuildTrainStep.h - reverse-mode autodiff of the forward function ---===//
//
// From @forward (parameters and inputs to the scalar loss, see AttachLoss.h)
// builds @train_step with the same arguments, returning the loss and the
// gradient of every trainable parameter the loss depends on (result
// attribute `nn.grad` = the parameter's name), then removes @forward. The
// backward pass is built from each op's GradientOpInterface; only the
// forward values some gradient reads stay alive, since everything else is
// dead code and removed.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_AUTODIFF_BUILDTRAINSTEP_H
#define FSDP_COMPILER_AUTODIFF_BUILDTRAINSTEP_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fsdp {

struct TrainStepOptions {
  /// Parameters whose names match this POSIX extended regex are constants
  /// of training (torch buffers exported as initializers); empty: none.
  std::string freezeRegex;
  /// Dynamic loss scaling (--param-dtype=f16): the backward pass is seeded
  /// with an f32 argument marked `nn.loss_scale` instead of 1.
  bool lossScale = false;
};

inline constexpr llvm::StringLiteral kTrainStepName = "train_step";

mlir::LogicalResult buildTrainStep(mlir::ModuleOp module, const TrainStepOptions &options);

/// Erases pure ops without uses, last to first.
void eraseDeadOps(mlir::Block &block);

/// Replaces the return of single-block `step` with one of `results` and sets
/// the function's result types and attributes (one per result) to match: the
/// last step of every pass that changes what @train_step returns.
void setStepResults(mlir::func::FuncOp step, mlir::ArrayRef<mlir::Value> results,
                    mlir::ArrayRef<mlir::DictionaryAttr> attrs);

} // namespace fsdp

#endif // FSDP_COMPILER_AUTODIFF_BUILDTRAINSTEP_H
