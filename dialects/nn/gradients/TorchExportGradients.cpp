//===- TorchExportGradients.cpp - gradients of the torch 2.x export ops ---===//
//
// Formulas and operation order are torch's (tools/autograd/derivatives.yaml):
// cos `grad * -sin(x)`, sin `grad * cos(x)`, reciprocal
// `-grad * (y * y)`; gelu has a fused gradient op (torch's GeluBackward, one
// kernel instead of six temporaries). Softplus is ONNX's (no threshold), so
// its gradient is `grad * sigmoid(x)` everywhere. Pad's input gradient is
// the slice of grad it came from, Tile's the sum over the tiles, CumSum's
// the cumulative sum of grad in the other direction.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult GeluOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<GeluGradOp>(getLoc(), getType(), getInput(), grads[0],
                                           getApproximateAttr()));
  return success();
}

LogicalResult ReciprocalOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                           SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value negGrad = g.neg(grads[0]);
  Value square = g.mul(getResult(), getResult());
  out.push_back(g.mul(negGrad, square));
  return success();
}

LogicalResult CosOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value sin = builder.create<SinOp>(getLoc(), getType(), getInput());
  Value negSin = g.neg(sin);
  out.push_back(g.mul(grads[0], negSin));
  return success();
}

LogicalResult SinOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  Value cos = builder.create<CosOp>(getLoc(), getType(), getInput());
  out.push_back(GradientBuilder(builder, getLoc()).mul(grads[0], cos));
  return success();
}

LogicalResult SoftplusOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                         SmallVectorImpl<Value> &out) {
  Value sigmoid = builder.create<SigmoidOp>(getLoc(), getType(), getInput());
  out.push_back(GradientBuilder(builder, getLoc()).mul(grads[0], sigmoid));
  return success();
}

LogicalResult PadOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  ArrayRef<int64_t> shape = shapeOfValue(getInput());
  size_t rank = shape.size();
  SmallVector<int64_t> starts, ends, steps(rank, 1), all;
  for (size_t i = 0; i < rank; ++i) {
    starts.push_back(getPads()[i]);
    ends.push_back(getPads()[i] + shape[i]);
    all.push_back(i);
  }
  Value inputGrad;
  if (isDifferentiable(getInput()) || isDifferentiable(getValue()))
    inputGrad = builder.create<SliceOp>(getLoc(), getInput().getType(), grads[0],
                                        builder.getDenseI64ArrayAttr(starts),
                                        builder.getDenseI64ArrayAttr(ends),
                                        builder.getDenseI64ArrayAttr(steps));
  out.push_back(isDifferentiable(getInput()) ? inputGrad : Value());
  // The padding value fills every element the slice does not cover.
  Value valueGrad;
  if (isDifferentiable(getValue())) {
    Value total = g.reduceSum(grads[0], all, /*keepdims=*/false);
    Value inner = g.reduceSum(inputGrad, all, /*keepdims=*/false);
    valueGrad = g.sub(total, inner);
  }
  out.push_back(valueGrad);
  return success();
}

LogicalResult TileOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  GradientBuilder g(builder, getLoc());
  // grad viewed as [r0, d0, r1, d1, ...], summed over the r axes.
  ArrayRef<int64_t> shape = shapeOfValue(getInput());
  SmallVector<int64_t> split, tileAxes;
  for (auto [i, dim] : llvm::enumerate(shape)) {
    if (getRepeats()[i] != 1)
      tileAxes.push_back(split.size());
    if (getRepeats()[i] != 1)
      split.push_back(getRepeats()[i]);
    split.push_back(dim);
  }
  Value summed = g.reduceSum(g.reshape(grads[0], split), tileAxes, /*keepdims=*/false);
  out.push_back(g.reshape(summed, shape));
  return success();
}

LogicalResult CumSumOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  out.push_back(builder.create<CumSumOp>(getLoc(), getType(), grads[0], getAxisAttr(),
                                         getExclusiveAttr(),
                                         builder.getBoolAttr(!getReverse())));
  return success();
}
