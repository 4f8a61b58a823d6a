//===- AttentionOps.cpp - verifiers of attention and its gradient ---------===//
//
// Both ops check the shapes through the one rule the importer also uses
// (attentionShape), the operands' one float type, the mask's type (bool,
// that float type or f32, as torch's scaled_dot_product_attention takes)
// and the log-sum-exp's shape and type, and that dropout_p is in [0, 1);
// the gradient also checks that its results are shaped as the operands
// they differentiate.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

namespace {

/// The checks the two ops share: shapes, the operands' float type, the
/// mask's type, and lse: [B, H, Tq] in f32 (f64 for f64 operands).
LogicalResult verifyAttentionOperands(Operation *op, Value query, Value key, Value value,
                                      Value mask, Value result, Value lse) {
  std::optional<ArrayRef<int64_t>> maskShape;
  if (mask)
    maskShape = shapeOf(mask);
  if (failed(verifyShapeRule(op, result, [&](ErrorFn error) {
        return attentionShape(shapeOf(query), shapeOf(key), shapeOf(value), maskShape, error);
      })))
    return failure();
  Type type = elementTypeOf(query);
  if (elementTypeOf(key) != type || elementTypeOf(value) != type ||
      elementTypeOf(result) != type)
    return op->emitOpError("query, key, value and result must have one element type, got ")
           << type << ", " << elementTypeOf(key) << ", " << elementTypeOf(value) << " and "
           << elementTypeOf(result);
  if (mask) {
    Type m = elementTypeOf(mask);
    if (!m.isInteger(1) && m != type && !m.isF32())
      return op->emitOpError("mask must be bool, ")
             << type << " or f32, got " << m;
  }
  ArrayRef<int64_t> q = shapeOf(query);
  if (shapeOf(lse) != q.take_front(3))
    return op->emitOpError("lse must have shape ") << formatShape(q.take_front(3));
  Type expected = type.isF64() ? Type(Float64Type::get(op->getContext()))
                               : Type(Float32Type::get(op->getContext()));
  if (elementTypeOf(lse) != expected)
    return op->emitOpError("lse must be ") << expected << ", got " << elementTypeOf(lse);
  return success();
}

/// dropout_p is a probability that leaves something to keep.
LogicalResult verifyDropout(Operation *op, APFloat p) {
  const double value = p.convertToDouble();
  if (!(value >= 0.0 && value < 1.0))
    return op->emitOpError("dropout_p must be in [0, 1), got ") << value;
  return success();
}

} // namespace

LogicalResult AttentionOp::verify() {
  if (failed(verifyDropout(*this, getDropoutP())))
    return failure();
  return verifyAttentionOperands(*this, getQuery(), getKey(), getValue(), getMask(), getResult(),
                                 getLse());
}

LogicalResult AttentionGradOp::verify() {
  if (failed(verifyDropout(*this, getDropoutP())))
    return failure();
  if (failed(verifyAttentionOperands(*this, getQuery(), getKey(), getValue(), getMask(),
                                     getForwardResult(), getLse())))
    return failure();
  if (getGrad().getType() != getForwardResult().getType())
    return emitOpError("grad must have the forward result's type ") << getForwardResult().getType();
  if (getQueryGrad().getType() != getQuery().getType() ||
      getKeyGrad().getType() != getKey().getType() ||
      getValueGrad().getType() != getValue().getType())
    return emitOpError("query_grad, key_grad and value_grad must have the types of query, key "
                       "and value");
  return success();
}
