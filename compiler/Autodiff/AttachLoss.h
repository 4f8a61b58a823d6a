//===- AttachLoss.h - choose or attach the training loss ------------------===//
//
// Training needs one scalar to differentiate. `--loss=auto` keeps the loss
// the model already computes (its single scalar float output, preferring
// one named "loss" when there are several); `--loss=xent:OUTPUT[,LABELS]`
// attaches a mean softmax cross-entropy to the logits output OUTPUT against
// the integer input LABELS (added as a new graph input when the model has
// none of that name). Either way @forward is left returning exactly the
// loss, named "loss" unless the model named it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_AUTODIFF_ATTACHLOSS_H
#define FSDP_COMPILER_AUTODIFF_ATTACHLOSS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <string>

namespace fsdp {

struct LossSpec {
  /// False: use the model's scalar output. True: cross-entropy on `output`.
  bool crossEntropy = false;
  std::string output;
  /// The labels input; empty means "labels".
  std::string labels;
};

mlir::LogicalResult attachLoss(mlir::func::FuncOp forward, const LossSpec &spec);

} // namespace fsdp

#endif // FSDP_COMPILER_AUTODIFF_ATTACHLOSS_H
