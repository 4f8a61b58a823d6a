//===- ApplyOptimizer.h - append the optimizer update to the train step ---===//
//
// Turns @train_step's gradients (results marked `nn.grad`) into parameter
// updates: one nn.adamw or nn.sgd per trainable parameter, new arguments for
// the optimizer state ("<param>.exp_avg", "<param>.exp_avg_sq" or
// "<param>.momentum_buffer", attribute `nn.state`) and for the learning rate
// and step number (`nn.lr`, `nn.step`), and results carrying the new
// parameter and state values (`nn.update` = the argument they replace).
// The step then returns (loss, new parameters..., new state...).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_TRANSFORMS_APPLYOPTIMIZER_H
#define FSDP_COMPILER_TRANSFORMS_APPLYOPTIMIZER_H

#include "compiler/Pipelines/CompileOptions.h"

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fsdp {

/// Defaults are the flags' (compiler/Pipelines/CompileFlags.def), except
/// weight decay: as given here, where --weight-decay's default depends on
/// the optimizer (effectiveWeightDecay).
struct OptimizerOptions {
  OptimizerKind kind = defaults::optimizer;
  double beta1 = defaults::beta1, beta2 = defaults::beta2, eps = defaults::eps;
  double weightDecay = 0.0;
  double momentum = defaults::momentum;
  bool nesterov = defaults::nesterov;
  /// Parameters matching this POSIX extended regex get no weight decay.
  std::string noDecayRegex;
};

mlir::LogicalResult applyOptimizer(mlir::ModuleOp module, const OptimizerOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_APPLYOPTIMIZER_H
