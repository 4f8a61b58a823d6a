//===- DataMovement.cpp - import of Pad, Tile and CumSum ------------------===//
//
// The data movement torch 2.x graphs add: Pad in constant mode
// (transformers' label shift pads int64 labels with -100; reflect, edge and
// wrap are refused by name), Tile (repeat_interleave on the legacy path) and
// CumSum (mask and position chains). Pads, repeats, axes and the CumSum axis
// must be constants, so every result shape is static. Negative pads crop:
// they become an nn.slice before a non-negative nn.pad. On integer
// constants (shape and mask chains) all three fold on the host.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

#include <cmath>

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

/// A rank-0 nn.constant of `element` holding `value`.
Value scalarConstant(ImportContext &ctx, Type element, double value) {
  OpBuilder &b = ctx.builder();
  auto type = RankedTensorType::get({}, element);
  mlir::Attribute attr = isa<FloatType>(element)
                       ? mlir::Attribute(b.getFloatAttr(element, value))
                       : mlir::Attribute(b.getIntegerAttr(element, static_cast<int64_t>(value)));
  return b.create<nn::ConstantOp>(ctx.loc(), type, DenseElementsAttr::get(type, attr));
}

/// The `value` attribute of Pad before opset 11. For integer data it must be
/// finite and within int64: converting anything else is undefined, and the
/// attribute comes from an untrusted model.
FailureOr<double> legacyPadValue(ImportContext &ctx, Type element) {
  float value = ctx.floatAttr("value", 0.0f);
  if (ctx.failed())
    return failure();
  if (!isa<FloatType>(element) && !(std::isfinite(value) && value >= -0x1p63f && value < 0x1p63f)) {
    (void)ctx.error("value " + Twine(std::to_string(value)) + " does not fit the integer data");
    return failure();
  }
  return static_cast<double>(value);
}

/// Pad's constant value: input 2 (opset >= 11; one element of the data's
/// type) as a rank-0 value, or the `value` attribute (opset < 11), or 0.
FailureOr<Value> padValue(ImportContext &ctx, Type element) {
  if (ctx.opset() < 11) {
    FailureOr<double> value = legacyPadValue(ctx, element);
    if (failed(value))
      return failure();
    return scalarConstant(ctx, element, *value);
  }
  if (!ctx.hasInput(2))
    return scalarConstant(ctx, element, 0.0);
  FailureOr<InputInfo> value = getInput(ctx, 2);
  if (failed(value))
    return failure();
  if (value->element() != element) {
    (void)ctx.error("constant_value's element type differs from the data's");
    return failure();
  }
  if (nn::numElements(value->shape()) != 1) {
    (void)ctx.error("constant_value must have one element, got shape " +
                    nn::formatShape(value->shape()));
    return failure();
  }
  if (value->rank() == 0)
    return value->value;
  return ctx.builder()
      .create<nn::ReshapeOp>(ctx.loc(), RankedTensorType::get({}, element), value->value)
      .getResult();
}

} // namespace

LogicalResult importPad(ImportContext &ctx) {
  bool legacy = ctx.opset() < 11;
  if (failed(legacy ? ctx.checkAttributes({"mode", "pads", "value"})
                    : ctx.checkAttributes({"mode"})))
    return failure();
  std::string mode = ctx.stringAttr("mode", "constant");
  // The type only: a constant input is materialized only if it does not fold.
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type) || ctx.failed())
    return failure();
  if (mode != "constant")
    return ctx.error("mode '" + mode + "' is not implemented yet (only 'constant')");
  // pads (and, from opset 18, the axes they apply to).
  std::vector<int64_t> pads, axes;
  if (legacy) {
    std::optional<std::vector<int64_t>> p = ctx.intsAttr("pads");
    if (!p)
      return ctx.error("attribute 'pads' is required");
    pads = *p;
  } else {
    FailureOr<std::vector<int64_t>> p = ctx.requireIntsInput(1, "pads");
    if (failed(p))
      return failure();
    pads = *p;
    if (ctx.opset() >= 18 && ctx.hasInput(3)) {
      FailureOr<std::vector<int64_t>> a = ctx.requireIntsInput(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
  }
  int64_t rank = type->getRank();
  ArrayRef<int64_t> dims = type->getShape();
  Type element = type->getElementType();
  if (axes.empty())
    for (int64_t i = 0; i < rank; ++i)
      axes.push_back(i);
  if (pads.size() != 2 * axes.size())
    return ctx.error("pads has " + Twine(pads.size()) + " entries, expected 2 x " +
                     Twine(axes.size()));
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxesInOrder(ctx, axes, rank);
  if (failed(normalized))
    return failure();
  SmallVector<int64_t> begins(rank, 0), ends(rank, 0);
  for (auto [i, axis] : llvm::enumerate(*normalized)) {
    begins[axis] = pads[i];
    ends[axis] = pads[axes.size() + i];
  }
  // Negative pads crop first: a slice to [-begin, dim + end). Each crop is
  // bounded by the dimension before it is negated or added, so a pad of
  // INT64_MIN is refused like any other over-crop instead of overflowing.
  SmallVector<int64_t> starts(rank), stops(rank), steps(rank, 1), nonNegative(2 * rank);
  bool crops = false;
  for (int64_t i = 0; i < rank; ++i) {
    int64_t dim = dims[i];
    int64_t cropBegin = std::min<int64_t>(begins[i], 0);
    int64_t cropEnd = std::min<int64_t>(ends[i], 0);
    if (cropBegin < -dim || -cropBegin > dim + cropEnd)
      return ctx.error("pads (" + Twine(begins[i]) + ", " + Twine(ends[i]) +
                       ") crop more than the " + Twine(dim) + " elements of dimension " +
                       Twine(i));
    starts[i] = -cropBegin;
    stops[i] = dim + cropEnd;
    crops |= starts[i] != 0 || stops[i] != dim;
    nonNegative[i] = std::max<int64_t>(begins[i], 0);
    nonNegative[rank + i] = std::max<int64_t>(ends[i], 0);
  }
  FailureOr<nn::Shape> cropped =
      nn::sliceShape(dims, starts, stops, steps, ctx.errorFn());
  if (failed(cropped))
    return failure();
  FailureOr<nn::Shape> shape = nn::padShape(*cropped, nonNegative, ctx.errorFn());
  if (failed(shape))
    return failure();
  // Integer constants fold (value known too).
  const Tensor *constant = ctx.constantInput(0);
  std::optional<int64_t> knownValue;
  if (constant && isFoldableInteger(*constant) && nn::numElements(*shape) <= kMaxFoldElements) {
    if (legacy) {
      FailureOr<double> value = legacyPadValue(ctx, element);
      if (failed(value))
        return failure();
      knownValue = static_cast<int64_t>(*value);
    } else if (!ctx.hasInput(2)) {
      knownValue = 0;
    } else if (const Tensor *c = ctx.constantInput(2); c && isFoldableInteger(*c) &&
                                                     c->numElements() == 1)
      knownValue = c->intAt(0);
    if (knownValue) {
      Tensor sliced = foldSlice(*constant, starts, steps, *cropped);
      return ctx.setConstantOutput(
          0, foldPad(sliced, ArrayRef<int64_t>(nonNegative).take_front(rank), *knownValue,
                     *shape));
    }
  }
  FailureOr<InputInfo> data = getInput(ctx, 0);
  if (failed(data))
    return failure();
  OpBuilder &b = ctx.builder();
  Value input = data->value;
  if (crops)
    input = b.create<nn::SliceOp>(ctx.loc(), ctx.tensorType(*cropped, element), input,
                                  b.getDenseI64ArrayAttr(starts), b.getDenseI64ArrayAttr(stops),
                                  b.getDenseI64ArrayAttr(steps));
  FailureOr<Value> value = padValue(ctx, element);
  if (failed(value))
    return failure();
  if (llvm::all_of(nonNegative, [](int64_t p) { return p == 0; }))
    return ctx.setOutput(0, input);
  return ctx.setOutput(0, b.create<nn::PadOp>(ctx.loc(), ctx.tensorType(*shape, element),
                                              input, *value,
                                              b.getDenseI64ArrayAttr(nonNegative)));
}

LogicalResult importTile(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> repeats = ctx.requireIntsInput(1, "repeats");
  if (failed(type) || failed(repeats))
    return failure();
  FailureOr<nn::Shape> shape = nn::tileShape(type->getShape(), *repeats, ctx.errorFn());
  if (failed(shape))
    return failure();
  if (const Tensor *c = ctx.constantInput(0);
      c && isFoldableInteger(*c) && nn::numElements(*shape) <= kMaxFoldElements)
    return ctx.setConstantOutput(0, foldTile(*c, *shape));
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  if (input->shape() == ArrayRef<int64_t>(*shape))
    return ctx.setOutput(0, input->value);
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::TileOp>(ctx.loc(), ctx.tensorType(*shape, input->element()),
                                               input->value, b.getDenseI64ArrayAttr(*repeats)));
}

LogicalResult importCumSum(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"exclusive", "reverse"})))
    return failure();
  bool exclusive = ctx.intAttr("exclusive", 0) != 0, reverse = ctx.intAttr("reverse", 0) != 0;
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> axisValues = ctx.requireIntsInput(1, "axis");
  if (failed(type) || failed(axisValues) || ctx.failed())
    return failure();
  if (axisValues->size() != 1)
    return ctx.error("axis must hold one value, got " + Twine(axisValues->size()));
  FailureOr<int64_t> axis = nn::normalizeAxis((*axisValues)[0], type->getRank(), ctx.errorFn());
  if (failed(axis))
    return failure();
  if (type->getElementType().isInteger(1))
    return ctx.error("input must be numeric, got bool");
  if (const Tensor *c = ctx.constantInput(0); c && isFoldableInteger(*c))
    return ctx.setConstantOutput(0, foldCumSum(*c, *axis, exclusive, reverse));
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::CumSumOp>(ctx.loc(), input->type, input->value,
                                                 b.getI64IntegerAttr(*axis),
                                                 b.getBoolAttr(exclusive), b.getBoolAttr(reverse)));
}

} // namespace fsdp::onnx
