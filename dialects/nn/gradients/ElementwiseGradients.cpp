//===- ElementwiseGradients.cpp - gradients of elementwise ops ------------===//
//
// The formulas are torch's (tools/autograd/derivatives.yaml), written with
// the same operation order where it matters for rounding: `grad / (2 * y)`
// for sqrt, `-grad * (y / b)` for the divisor of a division. Broadcast
// operands get their gradient summed back to their own shape. Integer and
// bool operands (masks, exponents given as integers) get no gradient, nor
// does torch's wrapped number, the rank-0 f32 operand of a bf16/f16
// add/sub/mul/div (a Python scalar in torch); the tensor operand's gradient
// then has the tensor's type, and building it may use the same mix.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

namespace {

/// A null gradient for operands that cannot carry one.
Value ifDifferentiable(Value operand, Value grad) {
  return isDifferentiable(operand) ? grad : Value();
}

/// Whether an add/sub/mul/div operand gets a gradient: a float operand of the
/// result's element type (so not the wrapped number, see the header).
bool wantsGradient(Operation *op, Value operand) {
  return isDifferentiable(operand) &&
         elementTypeOfValue(operand) == elementTypeOfValue(op->getResult(0));
}

} // namespace

LogicalResult AddOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  out.push_back(wantsGradient(*this, getLhs()) ? g.sumToShapeOf(grads[0], getLhs()) : Value());
  out.push_back(wantsGradient(*this, getRhs()) ? g.sumToShapeOf(grads[0], getRhs()) : Value());
  return success();
}

LogicalResult SubOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  out.push_back(wantsGradient(*this, getLhs()) ? g.sumToShapeOf(grads[0], getLhs()) : Value());
  out.push_back(wantsGradient(*this, getRhs()) ? g.neg(g.sumToShapeOf(grads[0], getRhs()))
                                               : Value());
  return success();
}

LogicalResult MulOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value grad = grads[0];
  Value lhsGrad, rhsGrad;
  if (wantsGradient(*this, getLhs()))
    lhsGrad = g.sumToShapeOf(g.mul(grad, getRhs()), getLhs());
  if (wantsGradient(*this, getRhs()))
    rhsGrad = g.sumToShapeOf(g.mul(grad, getLhs()), getRhs());
  out.push_back(lhsGrad);
  out.push_back(rhsGrad);
  return success();
}

LogicalResult DivOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value grad = grads[0];
  Value lhsGrad;
  if (wantsGradient(*this, getLhs()))
    lhsGrad = g.sumToShapeOf(g.div(grad, getRhs()), getLhs());
  out.push_back(lhsGrad);
  // d(a/b)/db = -a/b^2 = -(y / b), with y the quotient already computed.
  // Ops are built one statement at a time: the IR's op order must not
  // depend on the C++ compiler's argument evaluation order.
  Value rhsGrad;
  if (wantsGradient(*this, getRhs())) {
    Value negGrad = g.neg(grad);
    Value ratio = g.div(getResult(), getRhs());
    rhsGrad = g.sumToShapeOf(g.mul(negGrad, ratio), getRhs());
  }
  out.push_back(rhsGrad);
  return success();
}

LogicalResult PowOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value grad = grads[0], base = getBase();
  Value exponent = g.cast(getExponent(), elementTypeOfValue(base));
  // d(x^e)/dx = e * x^(e-1).
  Value dBase = g.mul(exponent, g.pow(base, g.sub(exponent, g.scalarLike(base, 1.0))));
  out.push_back(ifDifferentiable(base, g.sumToShapeOf(g.mul(grad, dBase), base)));
  // d(x^e)/de = x^e * log(x); only built when the exponent is a float
  // tensor (constants' gradients are dropped as dead code).
  Value exponentGrad;
  if (isDifferentiable(getExponent()))
    exponentGrad = g.sumToShapeOf(g.mul(grad, g.mul(getResult(), g.log(base))), getExponent());
  out.push_back(exponentGrad);
  return success();
}

LogicalResult WhereOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                      SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value grad = grads[0], zero = g.scalarLike(grad, 0.0);
  out.push_back(Value()); // the condition
  out.push_back(ifDifferentiable(getX(), g.sumToShapeOf(g.where(getCondition(), grad, zero), getX())));
  out.push_back(ifDifferentiable(getY(), g.sumToShapeOf(g.where(getCondition(), zero, grad), getY())));
  return success();
}

namespace {

/// torch's rule for maximum/minimum (derivatives.yaml): the gradient goes to
/// the operand that won, and is split evenly on ties:
/// `where(a == b, grad / 2, grad).masked_fill_(a loses, 0)`. `losesLhs` is
/// the predicate under which lhs lost ("lt" for max, "gt" for min).
void minMaxGradients(OpBuilder &builder, Location loc, Value lhs, Value rhs, Value grad,
                     StringRef losesLhs, StringRef losesRhs, SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, loc);
  Value zero = g.scalarLike(grad, 0.0);
  Value tie = g.compare("eq", lhs, rhs);
  Value half = g.div(grad, g.scalarLike(grad, 2.0));
  Value shared = g.where(tie, half, grad);
  Value lhsGrad, rhsGrad;
  if (isDifferentiable(lhs))
    lhsGrad = g.sumToShapeOf(g.where(g.compare(losesLhs, lhs, rhs), zero, shared), lhs);
  if (isDifferentiable(rhs))
    rhsGrad = g.sumToShapeOf(g.where(g.compare(losesRhs, lhs, rhs), zero, shared), rhs);
  out.push_back(lhsGrad);
  out.push_back(rhsGrad);
}

} // namespace

LogicalResult MaxOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  minMaxGradients(builder, getLoc(), getLhs(), getRhs(), grads[0], "lt", "gt", out);
  return success();
}

LogicalResult MinOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  minMaxGradients(builder, getLoc(), getLhs(), getRhs(), grads[0], "gt", "lt", out);
  return success();
}

LogicalResult NegOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(ifDifferentiable(getInput(), GradientBuilder(builder, getLoc()).neg(grads[0])));
  return success();
}

LogicalResult ReluOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  if (!isDifferentiable(getInput()))
    return out.push_back(Value()), success();
  out.push_back(builder.create<ReluGradOp>(getLoc(), getType(), getResult(), grads[0]));
  return success();
}

LogicalResult ExpOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(GradientBuilder(builder, getLoc()).mul(grads[0], getResult()));
  return success();
}

LogicalResult LogOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(GradientBuilder(builder, getLoc()).div(grads[0], getInput()));
  return success();
}

LogicalResult SqrtOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  out.push_back(g.div(grads[0], g.mul(getResult(), g.scalarLike(getResult(), 2.0))));
  return success();
}

LogicalResult ErfOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                    SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<ErfGradOp>(getLoc(), getType(), getInput(), grads[0]));
  return success();
}

LogicalResult TanhOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<TanhGradOp>(getLoc(), getType(), getResult(), grads[0]));
  return success();
}

LogicalResult SigmoidOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<SigmoidGradOp>(getLoc(), getType(), getResult(), grads[0]));
  return success();
}

LogicalResult CastOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                     SmallVectorImpl<Value> &out) {
  // Only float-to-float casts pass gradients (back in the source precision).
  bool floats = isDifferentiable(getInput()) && isDifferentiable(getResult());
  out.push_back(floats ? GradientBuilder(builder, getLoc())
                             .cast(grads[0], elementTypeOfValue(getInput()))
                       : Value());
  return success();
}
