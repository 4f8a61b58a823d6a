//===- Shape.cpp - import of shape and data-movement operators ------------===//
//
// Shape, Reshape, Unsqueeze, Squeeze, Transpose, Concat, Split, Slice,
// Expand, Gather, Trilu, and the dynamo exporter's SplitToSequence,
// SequenceAt and GatherND (folded only). Shape operands (Reshape's shape,
// Slice's bounds, axes, split sizes) must be compile-time constants; ONNX's
// conventions for them (0 and -1 in shapes, negative and out-of-range slice
// bounds, axes given as attributes before opset 13 and as inputs after) are
// resolved here, so the nn ops carry only explicit static values. On
// constant integer inputs these ops fold, which is what removes torch's
// shape computations from the graph.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

/// Axes from the attribute (before `inputSince`) or from input `index`.
FailureOr<std::optional<std::vector<int64_t>>>
readAxes(ImportContext &ctx, int64_t inputSince, size_t index) {
  if (ctx.opset() < inputSince)
    return ctx.intsAttr("axes");
  if (ctx.attribute("axes")) {
    (void)ctx.error("axes is an input since opset " + Twine(inputSince) + ", not an attribute");
    return failure();
  }
  if (!ctx.hasInput(index))
    return std::optional<std::vector<int64_t>>();
  FailureOr<std::vector<int64_t>> axes = ctx.requireIntsInput(index, "axes");
  if (failed(axes))
    return failure();
  return std::optional<std::vector<int64_t>>(*axes);
}

/// Squeeze and Unsqueeze: the axes (attribute before opset 13, input
/// after) and the data's type.
FailureOr<std::optional<std::vector<int64_t>>>
readSqueezeAxes(ImportContext &ctx, FailureOr<RankedTensorType> &type) {
  if (failed(ctx.checkAttributes({"axes"})))
    return failure();
  FailureOr<std::optional<std::vector<int64_t>>> axes = readAxes(ctx, 13, 1);
  type = ctx.inputType(0);
  if (failed(axes) || failed(type) || ctx.failed())
    return failure();
  return axes;
}

bool isFoldable(const Tensor *t) { return t && isFoldableInteger(*t); }

/// Split's and SplitToSequence's explicit sizes: each non-negative, adding
/// up to the dimension. Each is compared with what is left before it is
/// added: sizes from the model may add up past int64.
LogicalResult checkSplitSizes(ImportContext &ctx, ArrayRef<int64_t> sizes, int64_t dim) {
  int64_t total = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return ctx.error("split sizes must be non-negative");
    if (size > dim - total)
      return ctx.error("split sizes add up to more than the dimension " + Twine(dim));
    total += size;
  }
  if (total != dim)
    return ctx.error("split sizes add up to " + Twine(total) + ", not " + Twine(dim));
  return success();
}

} // namespace

LogicalResult importShape(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"start", "end"})))
    return failure();
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  int64_t rank = type->getRank();
  auto clampDim = [&](int64_t v) {
    if (v < 0)
      v += rank;
    return std::clamp<int64_t>(v, 0, rank);
  };
  int64_t start = clampDim(ctx.intAttr("start", 0));
  int64_t end = clampDim(ctx.intAttr("end", rank));
  ArrayRef<int64_t> dims = type->getShape();
  std::vector<int64_t> values;
  for (int64_t i = start; i < end; ++i)
    values.push_back(dims[i]);
  return ctx.setConstantOutput(0, makeInt64Tensor(values));
}

LogicalResult importReshape(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"allowzero"})))
    return failure();
  bool allowZero = ctx.intAttr("allowzero", 0) != 0;
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  FailureOr<std::vector<int64_t>> requested = ctx.requireIntsInput(1, "shape");
  if (failed(type) || failed(requested))
    return failure();
  ArrayRef<int64_t> input = type->getShape();
  nn::Shape shape;
  int64_t inferAt = -1, known = 1;
  for (size_t i = 0; i < requested->size(); ++i) {
    int64_t d = (*requested)[i];
    if (d == 0 && !allowZero) {
      if (i >= input.size())
        return ctx.error("shape entry " + Twine(i) + " is 0 (copy) but the input has rank " +
                         Twine(input.size()));
      d = input[i];
    } else if (d == -1) {
      if (inferAt >= 0)
        return ctx.error("shape " + nn::formatShape(*requested) + " has more than one -1");
      inferAt = i;
      shape.push_back(1);
      continue;
    } else if (d < 0) {
      return ctx.error("shape " + nn::formatShape(*requested) + " has a negative entry");
    }
    shape.push_back(d);
    // A hostile shape's product overflows int64: refuse it rather than
    // compare a wrapped count.
    if (__builtin_mul_overflow(known, d, &known))
      return ctx.error("shape " + nn::formatShape(*requested) +
                       " has more elements than an int64 counts");
  }
  int64_t total = nn::numElements(input);
  if (inferAt >= 0) {
    if (known == 0 || total % known != 0)
      return ctx.error("cannot infer the -1 in shape " + nn::formatShape(*requested) +
                       " for an input of shape " + nn::formatShape(input));
    shape[inferAt] = total / known;
  } else if (known != total) {
    return ctx.error("cannot reshape " + nn::formatShape(input) + " to " +
                     nn::formatShape(shape) + ": element counts differ");
  }
  return bindReshape(ctx, shape);
}

LogicalResult importUnsqueeze(ImportContext &ctx) {
  FailureOr<RankedTensorType> type;
  FailureOr<std::optional<std::vector<int64_t>>> axes = readSqueezeAxes(ctx, type);
  if (failed(axes))
    return failure();
  if (!*axes || (*axes)->empty())
    return ctx.error("axes are required");
  int64_t outRank = type->getRank() + static_cast<int64_t>((*axes)->size());
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ctx, **axes, outRank);
  if (failed(normalized))
    return failure();
  // The normalized axes are sorted: one walk places the new 1s.
  nn::Shape shape;
  ArrayRef<int64_t> input = type->getShape(), added = *normalized;
  for (int64_t i = 0, next = 0; i < outRank; ++i) {
    bool isNew = !added.empty() && added.front() == i;
    if (isNew)
      added = added.drop_front();
    shape.push_back(isNew ? 1 : input[next++]);
  }
  return bindReshape(ctx, shape);
}

LogicalResult importSqueeze(ImportContext &ctx) {
  FailureOr<RankedTensorType> type;
  FailureOr<std::optional<std::vector<int64_t>>> axes = readSqueezeAxes(ctx, type);
  if (failed(axes))
    return failure();
  ArrayRef<int64_t> input = type->getShape();
  SmallVector<int64_t> drop;
  if (*axes) {
    FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ctx, **axes, input.size());
    if (failed(normalized))
      return failure();
    drop = *normalized;
    for (int64_t axis : drop)
      if (input[axis] != 1)
        return ctx.error("cannot squeeze axis " + Twine(axis) + " of size " +
                         Twine(input[axis]));
  } else {
    for (size_t i = 0; i < input.size(); ++i)
      if (input[i] == 1)
        drop.push_back(i);
  }
  // drop is sorted: one walk skips the dropped axes.
  nn::Shape shape;
  ArrayRef<int64_t> dropped = drop;
  for (size_t i = 0; i < input.size(); ++i) {
    if (!dropped.empty() && dropped.front() == static_cast<int64_t>(i))
      dropped = dropped.drop_front();
    else
      shape.push_back(input[i]);
  }
  return bindReshape(ctx, shape);
}

LogicalResult importTranspose(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"perm"})))
    return failure();
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  std::vector<int64_t> perm;
  if (std::optional<std::vector<int64_t>> attr = ctx.intsAttr("perm"))
    perm = *attr;
  else
    for (int64_t i = type->getRank() - 1; i >= 0; --i)
      perm.push_back(i);
  if (ctx.failed())
    return failure();
  FailureOr<nn::Shape> shape = nn::transposeShape(type->getShape(), perm, ctx.errorFn());
  if (failed(shape))
    return failure();
  // Constant index tensors (the dynamo exporter's mask chains) fold.
  if (const Tensor *constant = ctx.constantInput(0); isFoldable(constant))
    return ctx.setConstantOutput(0, foldTranspose(*constant, perm, *shape));
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::TransposeOp>(ctx.loc(),
                                                    ctx.tensorType(*shape, input->element()),
                                                    input->value, b.getDenseI64ArrayAttr(perm)));
}

LogicalResult importConcat(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"axis"})))
    return failure();
  if (!ctx.attribute("axis"))
    return ctx.error("attribute 'axis' is required");
  int64_t axisAttr = ctx.intAttr("axis", 0);
  SmallVector<RankedTensorType> types;
  SmallVector<ArrayRef<int64_t>> shapes;
  SmallVector<const Tensor *> constants;
  bool allConstant = true;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<RankedTensorType> type = ctx.inputType(i);
    if (failed(type))
      return failure();
    if (!types.empty() && type->getElementType() != types.front().getElementType())
      return ctx.error("inputs have different element types");
    types.push_back(*type);
    const Tensor *constant = ctx.constantInput(i);
    allConstant &= isFoldable(constant);
    constants.push_back(constant);
  }
  if (types.empty() || ctx.failed())
    return ctx.error("needs at least one input");
  for (RankedTensorType &type : types)
    shapes.push_back(type.getShape());
  FailureOr<int64_t> axis = nn::normalizeAxis(axisAttr, types[0].getRank(), ctx.errorFn());
  if (failed(axis))
    return failure();
  FailureOr<nn::Shape> shape = nn::concatShape(shapes, *axis, ctx.errorFn());
  if (failed(shape))
    return failure();
  if (allConstant && nn::numElements(*shape) <= kMaxFoldElements)
    return ctx.setConstantOutput(0, foldConcat(constants, *axis, *shape));
  SmallVector<Value> values;
  for (size_t i = 0; i < ctx.numInputs(); ++i) {
    FailureOr<Value> value = ctx.input(i);
    if (failed(value))
      return failure();
    values.push_back(*value);
  }
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::ConcatOp>(ctx.loc(),
                                                 ctx.tensorType(*shape, types[0].getElementType()),
                                                 values, b.getI64IntegerAttr(*axis)));
}

LogicalResult importSplit(ImportContext &ctx) {
  // Opset 18 replaced the split attribute by num_outputs (split moved to an
  // input at 13).
  if (failed(ctx.opset() >= 18 ? ctx.checkAttributes({"axis", "num_outputs"})
                               : ctx.checkAttributes({"axis", "split"})))
    return failure();
  FailureOr<AxisInput> in = getInputAndAxis(ctx, 0);
  if (failed(in))
    return failure();
  const auto &[input, axis] = *in;
  std::vector<int64_t> sizes;
  if (ctx.opset() < 13) {
    if (std::optional<std::vector<int64_t>> attr = ctx.intsAttr("split"))
      sizes = *attr;
  } else if (ctx.attribute("split")) {
    return ctx.error("split is an input since opset 13, not an attribute");
  } else if (ctx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> values = ctx.requireIntsInput(1, "split");
    if (failed(values))
      return failure();
    sizes = *values;
  }
  int64_t dim = input.shape()[axis];
  int64_t parts = ctx.numOutputs();
  if (parts == 0)
    return ctx.error("needs at least one output");
  if (ctx.opset() >= 18) {
    // Opset 18 asks for exactly one of the split input and num_outputs;
    // num_outputs chunks are ceil(dim / n) with a smaller last one.
    bool hasNumOutputs = ctx.attribute("num_outputs") != nullptr;
    if (hasNumOutputs == ctx.hasInput(1))
      return ctx.error("needs exactly one of the 'split' input and the 'num_outputs' "
                       "attribute (opset 18)");
    if (hasNumOutputs) {
      int64_t n = ctx.intAttr("num_outputs", 0);
      if (ctx.failed())
        return failure();
      if (n != parts)
        return ctx.error("num_outputs is " + Twine(n) + " but the node has " + Twine(parts) +
                         " outputs");
      int64_t chunk = dim % n == 0 ? dim / n : dim / n + 1;
      int64_t last = dim - chunk * (n - 1);
      if (last < 0)
        return ctx.error("dimension " + Twine(dim) + " cannot be split into " + Twine(n) +
                         " chunks of " + Twine(chunk) + " (the last would have " +
                         Twine(last) + " elements)");
      sizes.assign(n - 1, chunk);
      sizes.push_back(last);
    }
  }
  if (sizes.empty()) {
    if (dim % parts != 0)
      return ctx.error("dimension " + Twine(dim) + " does not split into " + Twine(parts) +
                       " equal parts");
    sizes.assign(parts, dim / parts);
  }
  if (static_cast<int64_t>(sizes.size()) != parts)
    return ctx.error("split has " + Twine(sizes.size()) + " sizes for " + Twine(parts) +
                     " outputs");
  if (failed(checkSplitSizes(ctx, sizes, dim)))
    return failure();
  SmallVector<Type> resultTypes;
  for (int64_t size : sizes) {
    nn::Shape shape(input.shape().begin(), input.shape().end());
    shape[axis] = size;
    resultTypes.push_back(ctx.tensorType(shape, input.element()));
  }
  OpBuilder &b = ctx.builder();
  auto op = b.create<nn::SplitOp>(ctx.loc(), resultTypes, input.value,
                                  b.getI64IntegerAttr(axis));
  for (int64_t i = 0; i < parts; ++i)
    if (failed(ctx.setOutput(i, op.getResult(i))))
      return failure();
  return success();
}

LogicalResult importSlice(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"starts", "ends", "axes"})))
    return failure();
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type))
    return failure();
  std::vector<int64_t> starts, ends, axes, steps;
  if (ctx.opset() < 10) {
    std::optional<std::vector<int64_t>> s = ctx.intsAttr("starts"), e = ctx.intsAttr("ends");
    if (!s || !e)
      return ctx.error("attributes 'starts' and 'ends' are required");
    starts = *s;
    ends = *e;
    if (std::optional<std::vector<int64_t>> a = ctx.intsAttr("axes"))
      axes = *a;
  } else {
    FailureOr<std::vector<int64_t>> s = ctx.requireIntsInput(1, "starts");
    FailureOr<std::vector<int64_t>> e = ctx.requireIntsInput(2, "ends");
    if (failed(s) || failed(e))
      return failure();
    starts = *s;
    ends = *e;
    if (ctx.hasInput(3)) {
      FailureOr<std::vector<int64_t>> a = ctx.requireIntsInput(3, "axes");
      if (failed(a))
        return failure();
      axes = *a;
    }
    if (ctx.hasInput(4)) {
      FailureOr<std::vector<int64_t>> st = ctx.requireIntsInput(4, "steps");
      if (failed(st))
        return failure();
      steps = *st;
    }
  }
  if (ctx.failed())
    return failure();
  if (axes.empty())
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(i);
  if (steps.empty())
    steps.assign(starts.size(), 1);
  if (ends.size() != starts.size() || axes.size() != starts.size() ||
      steps.size() != starts.size())
    return ctx.error("starts, ends, axes and steps must have the same length");
  ArrayRef<int64_t> input = type->getShape();
  int64_t rank = input.size();
  SmallVector<int64_t> fullStarts(rank, 0), fullEnds(input.begin(), input.end()),
      fullSteps(rank, 1);
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxesInOrder(ctx, axes, rank);
  if (failed(normalized))
    return failure();
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = (*normalized)[i];
    if (steps[i] == 0)
      return ctx.error("slice steps must be nonzero");
    int64_t start = starts[i], end = ends[i];
    nn::clampSliceBounds(input[axis], steps[i], start, end);
    fullStarts[axis] = start;
    fullEnds[axis] = end;
    fullSteps[axis] = steps[i];
  }
  FailureOr<nn::Shape> shape =
      nn::sliceShape(input, fullStarts, fullEnds, fullSteps, ctx.errorFn());
  if (failed(shape))
    return failure();
  if (const Tensor *constant = ctx.constantInput(0); isFoldable(constant))
    return ctx.setConstantOutput(0, foldSlice(*constant, fullStarts, fullSteps, *shape));
  FailureOr<InputInfo> value = getInput(ctx, 0);
  if (failed(value))
    return failure();
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::SliceOp>(
                              ctx.loc(), ctx.tensorType(*shape, value->element()), value->value,
                              b.getDenseI64ArrayAttr(fullStarts), b.getDenseI64ArrayAttr(fullEnds),
                              b.getDenseI64ArrayAttr(fullSteps)));
}

LogicalResult importExpand(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  FailureOr<std::vector<int64_t>> requested = ctx.requireIntsInput(1, "shape");
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(requested) || failed(type))
    return failure();
  for (int64_t d : *requested)
    if (d < 0)
      return ctx.error("shape " + nn::formatShape(*requested) + " has a negative entry");
  FailureOr<nn::Shape> shape =
      nn::broadcastShapes({type->getShape(), *requested}, ctx.errorFn());
  if (failed(shape))
    return failure();
  if (const Tensor *constant = ctx.constantInput(0);
      isFoldable(constant) && nn::numElements(*shape) <= kMaxFoldElements)
    return ctx.setConstantOutput(0, foldExpand(*constant, *shape));
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input))
    return failure();
  if (ArrayRef<int64_t>(*shape) == input->shape())
    return ctx.setOutput(0, input->value);
  return ctx.setOutput(0, ctx.builder().create<nn::ExpandOp>(
                              ctx.loc(), ctx.tensorType(*shape, input->element()), input->value));
}

LogicalResult importGather(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"axis"})))
    return failure();
  int64_t axisAttr = ctx.intAttr("axis", 0);
  FailureOr<RankedTensorType> dataType = ctx.inputType(0), indexType = ctx.inputType(1);
  if (failed(dataType) || failed(indexType) || ctx.failed())
    return failure();
  Type indexElement = indexType->getElementType();
  if (!indexElement.isSignlessInteger(32) && !indexElement.isSignlessInteger(64))
    return ctx.error("indices must be int32 or int64");
  FailureOr<int64_t> axis = nn::normalizeAxis(axisAttr, dataType->getRank(), ctx.errorFn());
  if (failed(axis))
    return failure();
  FailureOr<nn::Shape> shape =
      nn::gatherShape(dataType->getShape(), indexType->getShape(), *axis, ctx.errorFn());
  if (failed(shape))
    return failure();
  const Tensor *data = ctx.constantInput(0), *indices = ctx.constantInput(1);
  if (isFoldable(data) && isFoldable(indices) && nn::numElements(*shape) <= kMaxFoldElements) {
    std::string error;
    std::optional<Tensor> folded = foldGather(*data, *indices, *axis, *shape, error);
    if (!folded)
      return ctx.error(error);
    return ctx.setConstantOutput(0, std::move(*folded));
  }
  FailureOr<Value> dataValue = ctx.input(0), indexValue = ctx.input(1);
  if (failed(dataValue) || failed(indexValue))
    return failure();
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::GatherOp>(
                              ctx.loc(), ctx.tensorType(*shape, dataType->getElementType()),
                              *dataValue, *indexValue, b.getI64IntegerAttr(*axis)));
}

LogicalResult importTrilu(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"upper"})))
    return failure();
  bool upper = ctx.intAttr("upper", 1) != 0;
  int64_t k = 0;
  if (ctx.hasInput(1)) {
    FailureOr<std::vector<int64_t>> values = ctx.requireIntsInput(1, "k");
    if (failed(values))
      return failure();
    if (values->size() != 1)
      return ctx.error("k must be a scalar");
    k = (*values)[0];
  }
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input) || ctx.failed())
    return failure();
  if (input->rank() < 2)
    return ctx.error("input must have rank >= 2");
  OpBuilder &b = ctx.builder();
  return ctx.setOutput(0, b.create<nn::TriluOp>(ctx.loc(), input->type, input->value,
                                                b.getBoolAttr(upper), b.getI64IntegerAttr(k)));
}

} // namespace fsdp::onnx

// --- structural ops of the dynamo exporter ---------------------------------

namespace fsdp::onnx {

LogicalResult importSplitToSequence(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"axis", "keepdims"})))
    return failure();
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  int64_t axisAttr = ctx.intAttr("axis", 0);
  // The type only: a constant input folds and is never materialized.
  FailureOr<RankedTensorType> type = ctx.inputType(0);
  if (failed(type) || ctx.failed())
    return failure();
  InputInfo input{nullptr, *type};
  FailureOr<int64_t> normalizedAxis = nn::normalizeAxis(axisAttr, input.rank(), ctx.errorFn());
  if (failed(normalizedAxis))
    return failure();
  int64_t axis = *normalizedAxis;
  int64_t dim = input.shape()[axis];
  // No split: chunks of 1, and keepdims = 0 drops the axis. A scalar
  // split: chunks of that size, the last smaller. A 1-D split: the sizes.
  // Every part becomes its own value: the count is charged to the model's
  // budget before any list of that length is made (a dimension may be up
  // to 2^48).
  auto checkParts = [&](int64_t parts) -> LogicalResult {
    return ctx.charge(ImportContext::Budget::SequenceParts, parts,
                      "splits dimension " + Twine(dim) + " into " + Twine(parts) + " parts");
  };
  std::vector<int64_t> sizes;
  if (ctx.hasInput(1)) {
    FailureOr<const Tensor *> split = ctx.requireConstantInput(1, "split");
    if (failed(split))
      return failure();
    if (!(*split)->isInteger() || (*split)->dims.size() > 1)
      return ctx.error("split must be an integer scalar or 1-D tensor");
    if ((*split)->dims.empty()) {
      int64_t chunk = (*split)->intAt(0);
      if (chunk <= 0)
        return ctx.error("split must be positive, got " + Twine(chunk));
      int64_t parts = dim / chunk + (dim % chunk != 0);
      if (failed(checkParts(parts)))
        return failure();
      for (int64_t k = 0; k < parts; ++k)
        sizes.push_back(std::min(chunk, dim - k * chunk));
    } else {
      int64_t parts = (*split)->numElements();
      if (failed(checkParts(parts)))
        return failure();
      for (int64_t k = 0; k < parts; ++k)
        sizes.push_back((*split)->intAt(k));
      if (failed(checkSplitSizes(ctx, sizes, dim)))
        return failure();
    }
  } else {
    if (failed(checkParts(dim)))
      return failure();
    sizes.assign(dim, 1);
  }
  bool dropAxis = !ctx.hasInput(1) && !keepdims;
  if (sizes.empty())
    return ctx.setSequenceOutput(0, {});

  std::vector<Slot> elements;
  const Tensor *constant = ctx.constantInput(0);
  SmallVector<Type> resultTypes;
  for (int64_t size : sizes) {
    nn::Shape shape(input.shape().begin(), input.shape().end());
    shape[axis] = size;
    resultTypes.push_back(ctx.tensorType(shape, input.element()));
  }
  nn::SplitOp split;
  if (!isFoldable(constant)) {
    FailureOr<Value> value = ctx.input(0);
    if (failed(value))
      return failure();
    input.value = *value;
    OpBuilder &b = ctx.builder();
    split = b.create<nn::SplitOp>(ctx.loc(), resultTypes, input.value, b.getI64IntegerAttr(axis));
  }
  int64_t offset = 0;
  for (size_t k = 0; k < sizes.size(); ++k) {
    auto partType = llvm::cast<RankedTensorType>(resultTypes[k]);
    nn::Shape outShape(partType.getShape().begin(), partType.getShape().end());
    if (dropAxis)
      outShape.erase(outShape.begin() + axis);
    auto outType = ctx.tensorType(outShape, input.element());
    if (split) {
      Value part = split.getResult(k);
      if (dropAxis)
        part = ctx.builder().create<nn::ReshapeOp>(ctx.loc(), outType, part);
      elements.push_back(Slot{part, nullptr, outType});
    } else {
      SmallVector<int64_t> starts(input.rank(), 0), steps(input.rank(), 1);
      starts[axis] = offset;
      Tensor part = foldSlice(*constant, starts, steps, partType.getShape());
      elements.push_back(
          Slot{nullptr, std::make_shared<Tensor>(foldReshape(part, outShape)), outType});
    }
    offset += sizes[k];
  }
  return ctx.setSequenceOutput(0, std::move(elements));
}

LogicalResult importSequenceAt(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({})))
    return failure();
  if (!ctx.hasInput(0))
    return ctx.error("input 0 is required");
  const std::string &name = ctx.node().inputs[0];
  const std::vector<Slot> *elements = ctx.sequence(name);
  if (!elements)
    return ctx.error("input_sequence '" + name + "' is not a sequence made by "
                     "SplitToSequence (the only sequences supported)");
  FailureOr<std::vector<int64_t>> position = ctx.requireIntsInput(1, "position");
  if (failed(position))
    return failure();
  if (position->size() != 1)
    return ctx.error("position must be a scalar");
  int64_t n = elements->size(), k = (*position)[0];
  if (k < -n || k >= n)
    return ctx.error("position " + Twine(k) + " is outside a sequence of " + Twine(n) +
                     " tensors");
  if (!ctx.hasOutput(0))
    return success();
  return ctx.define(ctx.node().outputs[0], (*elements)[k < 0 ? k + n : k]);
}

LogicalResult importGatherND(ImportContext &ctx) {
  if (failed(ctx.opset() >= 12 ? ctx.checkAttributes({"batch_dims"})
                               : ctx.checkAttributes({})))
    return failure();
  int64_t batchDims = ctx.intAttr("batch_dims", 0);
  FailureOr<RankedTensorType> dataType = ctx.inputType(0), indexType = ctx.inputType(1);
  if (failed(dataType) || failed(indexType) || ctx.failed())
    return failure();
  ArrayRef<int64_t> data = dataType->getShape(), indices = indexType->getShape();
  int64_t r = data.size(), q = indices.size();
  if (!indexType->getElementType().isSignlessInteger(64))
    return ctx.error("indices must be int64");
  if (r < 1 || q < 1)
    return ctx.error("data and indices must have rank >= 1");
  if (batchDims < 0 || batchDims >= std::min(r, q))
    return ctx.error("batch_dims " + Twine(batchDims) + " must be in [0, " +
                     Twine(std::min(r, q)) + ")");
  for (int64_t d = 0; d < batchDims; ++d)
    if (data[d] != indices[d])
      return ctx.error("batch dimension " + Twine(d) + " differs: data " +
                       nn::formatShape(data) + ", indices " + nn::formatShape(indices));
  int64_t depth = indices.back();
  if (depth < 1 || depth > r - batchDims)
    return ctx.error("indices' last dimension " + Twine(depth) + " must be in [1, " +
                     Twine(r - batchDims) + "]");
  nn::Shape shape(indices.begin(), indices.end() - 1);
  shape.append(data.begin() + batchDims + depth, data.end());
  const Tensor *dataValue = ctx.constantInput(0), *indexValue = ctx.constantInput(1);
  if (!dataValue || !indexValue || !dataValue->hasData || !indexValue->hasData)
    return ctx.error("GatherND on values that are not compile-time constants is not "
                     "implemented yet");
  if (nn::numElements(shape) > kMaxFoldElements)
    return ctx.error("GatherND result has more than " + Twine(kMaxFoldElements) +
                     " elements; folding larger constants is not implemented yet");
  std::string error;
  std::optional<Tensor> folded = foldGatherND(*dataValue, *indexValue, batchDims, shape, error);
  if (!folded)
    return ctx.error(error);
  return ctx.setConstantOutput(0, std::move(*folded));
}

} // namespace fsdp::onnx
