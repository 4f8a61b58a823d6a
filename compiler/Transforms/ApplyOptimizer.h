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

#include "mlir/IR/BuiltinOps.h"

#include <string>

namespace fsdp {

struct OptimizerOptions {
  enum class Kind { AdamW, Sgd } kind = Kind::AdamW;
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double weightDecay = 0.0;
  double momentum = 0.0;
  bool nesterov = false;
  /// Parameters matching this POSIX extended regex get no weight decay.
  std::string noDecayRegex;
};

mlir::LogicalResult applyOptimizer(mlir::ModuleOp module, const OptimizerOptions &options);

} // namespace fsdp

#endif // FSDP_COMPILER_TRANSFORMS_APPLYOPTIMIZER_H
