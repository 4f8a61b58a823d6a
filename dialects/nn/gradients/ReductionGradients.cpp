//===- ReductionGradients.cpp - gradients of reductions -------------------===//
//
// Sum and mean spread the gradient back over the reduced dimensions (mean
// divides first, on the small tensor, which gives the same bits as
// torch's divide-after-expand); max routes it to the elements equal to the
// maximum through one fused op.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

#include "dialects/nn/ShapeRules.h"

using namespace mlir;
using namespace fsdp::nn;

/// The gradient of a reduction result, reshaped to keep the reduced dims.
static Value keptDims(GradientBuilder &g, Value grad, Value input, ArrayRef<int64_t> axes) {
  auto noError = [](const Twine &) {};
  Shape kept = *reduceShape(shapeOfValue(input), axes, /*keepdims=*/true, noError);
  return g.reshape(grad, kept);
}

LogicalResult ReduceSumOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  GradientBuilder g(builder, getLoc());
  out.push_back(g.expand(keptDims(g, grads[0], getInput(), getAxes()), shapeOfValue(getInput())));
  return success();
}

LogicalResult ReduceMeanOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                           SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  GradientBuilder g(builder, getLoc());
  int64_t count = 1;
  for (int64_t axis : getAxes())
    count *= shapeOfValue(getInput())[axis];
  Value kept = keptDims(g, grads[0], getInput(), getAxes());
  Value mean = g.div(kept, g.scalarLike(grads[0], static_cast<double>(count)));
  out.push_back(g.expand(mean, shapeOfValue(getInput())));
  return success();
}

LogicalResult ReduceMaxOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  GradientBuilder g(builder, getLoc());
  Value output = keptDims(g, getResult(), getInput(), getAxes());
  Value grad = keptDims(g, grads[0], getInput(), getAxes());
  out.push_back(builder.create<ReduceMaxGradOp>(getLoc(), getInput().getType(), getInput(),
                                                output, grad, getAxesAttr()));
  return success();
}
