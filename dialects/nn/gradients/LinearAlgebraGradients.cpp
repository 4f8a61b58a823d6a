//===- LinearAlgebraGradients.cpp - gradients of matmul and gemm ----------===//
//
// matmul: dA = dY @ B^T and dB = A^T @ dY, after undoing numpy's 1-D
// promotion and summing broadcast batch dimensions. When B is a plain 2-D
// matrix (a Linear weight) and A carries batch dimensions, the batch is
// folded into the rows first, so dB is one [K, rows] x [rows, N] product
// instead of one product per batch entry followed by a sum.
// gemm: the four transpose cases map onto gemm's own trans flags, so no
// transpose is materialized.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult MatMulOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                       SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value a = getLhs(), b = getRhs(), grad = grads[0];
  if (!isDifferentiable(a))
    return emitOpError("integer matmuls have no gradient");
  ArrayRef<int64_t> aShape = shapeOfValue(a), bShape = shapeOfValue(b);
  // Promote 1-D operands as numpy does, and give the gradient the promoted
  // dimensions back.
  Value a2 = aShape.size() == 1 ? g.reshape(a, {1, aShape[0]}) : a;
  Value b2 = bShape.size() == 1 ? g.reshape(b, {bShape[0], 1}) : b;
  ArrayRef<int64_t> a2Shape = shapeOfValue(a2), b2Shape = shapeOfValue(b2);
  SmallVector<int64_t> gShape(shapeOfValue(grad));
  if (aShape.size() == 1)
    gShape.insert(gShape.end() - (bShape.size() == 1 ? 0 : 1), 1);
  if (bShape.size() == 1)
    gShape.push_back(1);
  Value g2 = g.reshape(grad, gShape);

  Value da = g.matmul(g2, g.transposeLast2(b2));
  out.push_back(g.reshape(g.sumTo(da, a2Shape), aShape));

  Value db;
  if (b2Shape.size() == 2 && a2Shape.size() > 2) {
    int64_t rows = 1;
    for (int64_t d : ArrayRef<int64_t>(gShape).drop_back())
      rows *= d;
    Value aRows = g.reshape(a2, {rows, a2Shape.back()});
    Value gRows = g.reshape(g2, {rows, gShape.back()});
    db = g.matmul(g.transposeLast2(aRows), gRows);
  } else {
    db = g.sumTo(g.matmul(g.transposeLast2(a2), g2), b2Shape);
  }
  out.push_back(g.reshape(db, bShape));
  return success();
}

LogicalResult GemmOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value a = getA(), b = getB(), grad = grads[0];
  if (!isDifferentiable(a))
    return emitOpError("integer gemms have no gradient");
  bool ta = getTransA(), tb = getTransB();
  FloatAttr alpha = getAlphaAttr(), zero = builder.getF32FloatAttr(0.0f);
  auto gemm = [&](Value x, Value y, bool tx, bool ty, Type type) -> Value {
    return builder.create<GemmOp>(getLoc(), type, x, y, Value(), alpha, zero,
                                  builder.getBoolAttr(tx), builder.getBoolAttr(ty));
  };
  // With A = op(a), B = op(b): dA = alpha dY B^T, dB = alpha A^T dY; each
  // case below returns the gradient in a's / b's own layout.
  Value da = ta ? gemm(b, grad, tb, true, a.getType()) : gemm(grad, b, false, !tb, a.getType());
  Value db = tb ? gemm(grad, a, true, ta, b.getType()) : gemm(a, grad, !ta, false, b.getType());
  out.push_back(da);
  out.push_back(db);
  if (Value c = getC()) {
    double beta = getBeta().convertToDouble();
    Value dc = beta == 1.0 ? grad : g.mul(grad, g.scalarLike(grad, beta));
    out.push_back(g.sumToShapeOf(dc, c));
  }
  return success();
}
