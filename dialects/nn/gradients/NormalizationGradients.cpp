//===- NormalizationGradients.cpp - softmax and layer-norm gradients ------===//
//
// Each maps to one fused gradient op that reads the forward result (softmax)
// or the saved statistics (layer norm), so the backward pass recomputes no
// reduction the forward already did. Layer norm's mean and inv_std_dev are
// statistics for the backward pass; a model that differentiates through
// them is refused rather than given a silently wrong gradient.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult SoftmaxOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<SoftmaxGradOp>(getLoc(), getType(), getResult(), grads[0],
                                              getAxisAttr()));
  return success();
}

LogicalResult LogSoftmaxOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                           SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<LogSoftmaxGradOp>(getLoc(), getType(), getResult(), grads[0],
                                                 getAxisAttr()));
  return success();
}

LogicalResult LayerNormOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &out) {
  if (grads[1] || grads[2])
    return emitOpError("differentiating through layer_norm's mean or inv_std_dev output "
                       "is not supported");
  GradientBuilder g(builder, getLoc());
  ArrayRef<int64_t> normalized = shapeOfValue(getInput()).drop_front(getAxis());
  Value scale = g.expand(getScale(), normalized);
  auto normType = g.tensorType(normalized, elementTypeOfValue(getInput()));
  auto grad = builder.create<LayerNormGradOp>(getLoc(), getInput().getType(), normType, normType,
                                              getInput(), scale, getMean(), getInvStdDev(),
                                              grads[0], getAxisAttr());
  out.push_back(grad.getInputGrad());
  out.push_back(g.sumToShapeOf(grad.getScaleGrad(), getScale()));
  if (Value bias = getBias())
    out.push_back(g.sumToShapeOf(grad.getBiasGrad(), bias));
  return success();
}
