//===- MiscGradients.cpp - gradient of dropout ----------------------------===//
//
// Training dropout routes the gradient through the mask the forward pass
// drew (the mask is a forward result, so the backward pass reuses exactly
// the same random draw); inference dropout is the identity.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult DropoutOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  bool active = getTraining() && getRatio().convertToDouble() > 0.0;
  out.push_back(active ? Value(builder.create<DropoutGradOp>(getLoc(), getInput().getType(),
                                                             grads[0], getMask(), getRatioAttr()))
                       : grads[0]);
  return success();
}
