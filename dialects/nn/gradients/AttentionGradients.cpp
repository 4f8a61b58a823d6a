//===- AttentionGradients.cpp - the gradient of nn.attention --------------===//
//
// One nn.attention_grad reads the forward's operands, result and
// log-sum-exp: the flash-style backward recomputes each probability from
// the log-sum-exp, so no score tensor is saved between the passes. The
// log-sum-exp is a statistic for the backward only (as layer norm's mean),
// and the mask is data, so a model that differentiates through either is
// refused rather than given a silently wrong gradient.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult AttentionOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &out) {
  if (grads[1])
    return emitOpError("differentiating through attention's lse output is not supported");
  Value grad = grads[0];
  auto op = builder.create<AttentionGradOp>(
      getLoc(), getQuery().getType(), getKey().getType(), getValue().getType(), getQuery(),
      getKey(), getValue(), getMask(), getResult(), getLse(), grad, getIsCausalAttr(),
      getScaleAttr(), getDropoutPAttr(), getSeedAttr());
  out.push_back(op.getQueryGrad());
  out.push_back(op.getKeyGrad());
  out.push_back(op.getValueGrad());
  if (getMask())
    out.push_back(Value());
  return success();
}
