//===- GradientBuilder.cpp - building blocks of gradient rules ------------===//
//
// Result types come from ShapeRules (the verifiers' own rules), so a rule
// that combines shapes wrongly fails verification at the op it built
// instead of producing a plausible but wrong gradient.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

#include "dialects/nn/ShapeRules.h"

using namespace mlir;

namespace fsdp::nn {

ArrayRef<int64_t> shapeOfValue(Value v) { return cast<RankedTensorType>(v.getType()).getShape(); }
Type elementTypeOfValue(Value v) { return cast<RankedTensorType>(v.getType()).getElementType(); }
bool isDifferentiable(Value v) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  return type && isa<FloatType>(type.getElementType());
}

/// Shapes reaching the builder were verified; a failing rule here is a bug
/// in a gradient rule, so it is reported loudly.
static Shape broadcastOrDie(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  auto noError = [](const Twine &) {};
  FailureOr<Shape> shape = broadcastShapes({a, b}, noError);
  if (failed(shape))
    llvm::report_fatal_error("gradient rule built a non-broadcastable pair of operands");
  return *shape;
}

template <typename Op> Value GradientBuilder::binary(Value lhs, Value rhs) {
  Shape shape = broadcastOrDie(shapeOfValue(lhs), shapeOfValue(rhs));
  return b.create<Op>(loc, tensorType(shape, elementTypeOfValue(lhs)), lhs, rhs);
}

Value GradientBuilder::add(Value lhs, Value rhs) { return binary<AddOp>(lhs, rhs); }
Value GradientBuilder::sub(Value lhs, Value rhs) { return binary<SubOp>(lhs, rhs); }
Value GradientBuilder::mul(Value lhs, Value rhs) { return binary<MulOp>(lhs, rhs); }
Value GradientBuilder::div(Value lhs, Value rhs) { return binary<DivOp>(lhs, rhs); }
Value GradientBuilder::pow(Value base, Value exponent) { return binary<PowOp>(base, exponent); }
Value GradientBuilder::neg(Value v) { return b.create<NegOp>(loc, v.getType(), v); }
Value GradientBuilder::log(Value v) { return b.create<LogOp>(loc, v.getType(), v); }

Value GradientBuilder::where(Value cond, Value x, Value y) {
  Shape shape = broadcastOrDie(shapeOfValue(cond), broadcastOrDie(shapeOfValue(x), shapeOfValue(y)));
  return b.create<WhereOp>(loc, tensorType(shape, elementTypeOfValue(x)), cond, x, y);
}

Value GradientBuilder::compare(StringRef predicate, Value lhs, Value rhs) {
  Shape shape = broadcastOrDie(shapeOfValue(lhs), shapeOfValue(rhs));
  return b.create<CompareOp>(loc, tensorType(shape, b.getI1Type()), b.getStringAttr(predicate),
                             lhs, rhs);
}

Value GradientBuilder::cast(Value v, Type elementType) {
  if (elementTypeOfValue(v) == elementType)
    return v;
  return b.create<CastOp>(loc, tensorType(shapeOfValue(v), elementType), v);
}

Value GradientBuilder::scalar(Type elementType, double value) {
  auto type = tensorType({}, elementType);
  Attribute element = isa<FloatType>(elementType)
                          ? Attribute(b.getFloatAttr(elementType, value))
                          : Attribute(b.getIntegerAttr(elementType, static_cast<int64_t>(value)));
  return b.create<ConstantOp>(loc, type, DenseElementsAttr::get(type, element));
}

Value GradientBuilder::scalarLike(Value like, double value) {
  return scalar(elementTypeOfValue(like), value);
}

Value GradientBuilder::zeros(Type type) {
  auto tensor = llvm::cast<RankedTensorType>(type);
  Type element = tensor.getElementType();
  Attribute zero = isa<FloatType>(element) ? Attribute(b.getFloatAttr(element, 0.0))
                                           : Attribute(b.getIntegerAttr(element, 0));
  return b.create<ConstantOp>(loc, tensor, DenseElementsAttr::get(tensor, zero));
}

Value GradientBuilder::reshape(Value v, ArrayRef<int64_t> shape) {
  if (shapeOfValue(v) == shape)
    return v;
  return b.create<ReshapeOp>(loc, tensorType(shape, elementTypeOfValue(v)), v);
}

Value GradientBuilder::transpose(Value v, ArrayRef<int64_t> perm) {
  // Transposes of transposes compose (and cancel): the gradient of
  // `x @ W^T` with respect to x is `g @ W`, read in place, not a copy of W
  // transposed twice.
  if (auto inner = v.getDefiningOp<TransposeOp>()) {
    SmallVector<int64_t> composed;
    for (int64_t p : perm)
      composed.push_back(inner.getPerm()[p]);
    if (llvm::all_of(llvm::enumerate(composed),
                     [](auto e) { return e.value() == static_cast<int64_t>(e.index()); }))
      return inner.getInput();
    return transpose(inner.getInput(), composed);
  }
  ArrayRef<int64_t> in = shapeOfValue(v);
  Shape shape;
  for (int64_t p : perm)
    shape.push_back(in[p]);
  return b.create<TransposeOp>(loc, tensorType(shape, elementTypeOfValue(v)), v,
                               b.getDenseI64ArrayAttr(perm));
}

Value GradientBuilder::transposeLast2(Value v) {
  int64_t rank = shapeOfValue(v).size();
  SmallVector<int64_t> perm;
  for (int64_t i = 0; i < rank; ++i)
    perm.push_back(i);
  std::swap(perm[rank - 1], perm[rank - 2]);
  return transpose(v, perm);
}

Value GradientBuilder::expand(Value v, ArrayRef<int64_t> shape) {
  if (shapeOfValue(v) == shape)
    return v;
  return b.create<ExpandOp>(loc, tensorType(shape, elementTypeOfValue(v)), v);
}

Value GradientBuilder::matmul(Value lhs, Value rhs) {
  auto noError = [](const Twine &) {};
  FailureOr<Shape> shape = matmulShape(shapeOfValue(lhs), shapeOfValue(rhs), noError);
  if (failed(shape))
    llvm::report_fatal_error("gradient rule built a matmul of mismatched operands");
  return b.create<MatMulOp>(loc, tensorType(*shape, elementTypeOfValue(lhs)), lhs, rhs);
}

Value GradientBuilder::reduceSum(Value v, ArrayRef<int64_t> axes, bool keepdims) {
  if (axes.empty())
    return v;
  auto noError = [](const Twine &) {};
  FailureOr<Shape> shape = reduceShape(shapeOfValue(v), axes, keepdims, noError);
  if (failed(shape))
    llvm::report_fatal_error("gradient rule built an invalid reduction");
  return b.create<ReduceSumOp>(loc, tensorType(*shape, elementTypeOfValue(v)), v,
                               b.getDenseI64ArrayAttr(axes), b.getBoolAttr(keepdims));
}

Value GradientBuilder::sumTo(Value grad, ArrayRef<int64_t> shape) {
  ArrayRef<int64_t> from = shapeOfValue(grad);
  if (from == shape)
    return grad;
  int64_t lead = static_cast<int64_t>(from.size()) - static_cast<int64_t>(shape.size());
  SmallVector<int64_t> axes;
  for (int64_t i = 0; i < static_cast<int64_t>(from.size()); ++i)
    if (i < lead || (shape[i - lead] == 1 && from[i] != 1))
      axes.push_back(i);
  return reshape(reduceSum(grad, axes, /*keepdims=*/true), shape);
}

Value GradientBuilder::sumToShapeOf(Value grad, Value like) {
  return sumTo(grad, shapeOfValue(like));
}

} // namespace fsdp::nn
