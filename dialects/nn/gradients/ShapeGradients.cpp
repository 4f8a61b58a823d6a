//===- ShapeGradients.cpp - gradients of data-movement ops ----------------===//
//
// Data movement is linear, so each gradient is the adjoint movement:
// reshape back, transpose by the inverse permutation, slice a concat's
// gradient apart and concatenate a split's back together (zeros for pieces
// nothing used), scatter-add for gather, zero-padding for slice, a sum over
// the broadcast dimensions for expand, the same triangle for trilu.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult ReshapeOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  out.push_back(isDifferentiable(getInput()) ? g.reshape(grads[0], shapeOfValue(getInput()))
                                             : Value());
  return success();
}

LogicalResult TransposeOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                          SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  SmallVector<int64_t> inverse(getPerm().size());
  for (auto [i, p] : llvm::enumerate(getPerm()))
    inverse[p] = i;
  GradientBuilder g(builder, getLoc());
  // (A @ B)^T = B^T @ A^T: the weight gradient of `x @ W^T` is built as
  // `g^T @ x` rather than as a product followed by a transposed copy. (The
  // product is fresh from a gradient rule: the gradient map holds it, no op
  // uses it yet.)
  auto product = grads[0].getDefiningOp<MatMulOp>();
  if (product && inverse == ArrayRef<int64_t>{1, 0} && product->use_empty() &&
      shapeOfValue(product.getLhs()).size() == 2 && shapeOfValue(product.getRhs()).size() == 2) {
    Value rhsT = g.transpose(product.getRhs(), inverse);
    Value lhsT = g.transpose(product.getLhs(), inverse);
    out.push_back(g.matmul(rhsT, lhsT));
    return success();
  }
  out.push_back(g.transpose(grads[0], inverse));
  return success();
}

LogicalResult ConcatOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  ArrayRef<int64_t> full = shapeOfValue(getResult());
  int64_t axis = getAxis(), offset = 0;
  for (Value input : getInputs()) {
    ArrayRef<int64_t> shape = shapeOfValue(input);
    if (!isDifferentiable(input)) {
      out.push_back(Value());
    } else {
      SmallVector<int64_t> starts(full.size(), 0), ends(full), steps(full.size(), 1);
      starts[axis] = offset;
      ends[axis] = offset + shape[axis];
      out.push_back(builder.create<SliceOp>(getLoc(), input.getType(), grads[0],
                                            builder.getDenseI64ArrayAttr(starts),
                                            builder.getDenseI64ArrayAttr(ends),
                                            builder.getDenseI64ArrayAttr(steps)));
    }
    offset += shape[axis];
  }
  return success();
}

LogicalResult SplitOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  GradientBuilder g(builder, getLoc());
  SmallVector<Value> pieces;
  for (auto [result, grad] : llvm::zip(getResults(), grads))
    pieces.push_back(grad ? grad : g.zeros(result.getType()));
  out.push_back(builder.create<ConcatOp>(getLoc(), getInput().getType(), pieces, getAxisAttr()));
  return success();
}

LogicalResult SliceOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  out.push_back(builder.create<SliceGradOp>(getLoc(), getInput().getType(), grads[0],
                                            getStartsAttr(), getEndsAttr(), getStepsAttr()));
  return success();
}

LogicalResult ExpandOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  out.push_back(isDifferentiable(getInput()) ? g.sumToShapeOf(grads[0], getInput()) : Value());
  return success();
}

LogicalResult GatherOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  out.push_back(isDifferentiable(getData())
                    ? Value(builder.create<GatherGradOp>(getLoc(), getData().getType(),
                                                         getIndices(), grads[0], getAxisAttr()))
                    : Value());
  out.push_back(Value()); // indices
  return success();
}

LogicalResult TriluOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  out.push_back(isDifferentiable(getInput())
                    ? Value(builder.create<TriluOp>(getLoc(), getType(), grads[0],
                                                    getUpperAttr(), getKAttr()))
                    : Value());
  return success();
}
