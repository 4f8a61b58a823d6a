//===- Misc.cpp - import of Constant, Dropout, Range, ConstantOfShape -----===//
//
// Constant becomes a value with a known constant (materialized as
// nn.constant only if used as a tensor). Dropout's ratio and training_mode
// must be constants: a static plan fixes whether dropout is active. Before
// opset 12 Dropout had no training input and ONNX runtimes treat it as
// inference (identity), which is what we import.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

#include <cstring>

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

template <typename T>
Tensor makeTensor(DType dtype, std::vector<int64_t> dims, const std::vector<T> &values) {
  Tensor t;
  t.dtype = dtype;
  t.dims = std::move(dims);
  t.data.resize(values.size() * sizeof(T));
  std::memcpy(t.data.data(), values.data(), t.data.size());
  return t;
}

} // namespace

LogicalResult importConstant(ImportContext &ctx) {
  if (ctx.node().attributes.size() != 1)
    return ctx.error("needs exactly one value attribute");
  const Attribute &attr = ctx.node().attributes[0];
  Tensor tensor;
  if (attr.name == "value" && attr.kind == Attribute::Kind::Tensor)
    tensor = *attr.tensor;
  else if (attr.name == "value_float" && attr.kind == Attribute::Kind::Float)
    tensor = makeTensor<float>(DType::Float, {}, {attr.f});
  else if (attr.name == "value_floats" && attr.kind == Attribute::Kind::Floats)
    tensor = makeTensor<float>(DType::Float, {static_cast<int64_t>(attr.floats.size())}, attr.floats);
  else if (attr.name == "value_int" && attr.kind == Attribute::Kind::Int)
    tensor = makeTensor<int64_t>(DType::Int64, {}, {attr.i});
  else if (attr.name == "value_ints" && attr.kind == Attribute::Kind::Ints)
    tensor = makeTensor<int64_t>(DType::Int64, {static_cast<int64_t>(attr.ints.size())}, attr.ints);
  else
    return ctx.error("unsupported value attribute '" + attr.name + "'");
  if (!tensor.hasData)
    return ctx.error("value has no data");
  return ctx.setConstantOutput(0, std::move(tensor));
}

LogicalResult importDropout(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"ratio", "seed"})))
    return failure();
  double ratio = 0.5;
  bool training = false;
  if (ctx.opset() < 12) {
    ratio = ctx.floatAttr("ratio", 0.5f);
  } else {
    if (ctx.attribute("ratio"))
      return ctx.error("ratio is an input since opset 12, not an attribute");
    if (ctx.hasInput(1)) {
      FailureOr<const Tensor *> r = ctx.requireConstantInput(1, "ratio");
      if (failed(r))
        return failure();
      if (!(*r)->isFloat() || (*r)->numElements() != 1)
        return ctx.error("ratio must be a float scalar");
      ratio = (*r)->floatAt(0);
    }
    if (ctx.hasInput(2)) {
      FailureOr<const Tensor *> t = ctx.requireConstantInput(2, "training_mode");
      if (failed(t))
        return failure();
      if ((*t)->dtype != DType::Bool || (*t)->numElements() != 1)
        return ctx.error("training_mode must be a bool scalar");
      training = (*t)->intAt(0) != 0;
    }
  }
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input) || ctx.failed())
    return failure();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return ctx.error("ratio must be in [0, 1), got " + std::to_string(ratio));
  OpBuilder &b = ctx.builder();
  IntegerAttr seed;
  if (ctx.attribute("seed"))
    seed = b.getI64IntegerAttr(ctx.intAttr("seed", 0));
  auto maskType = ctx.tensorType(input->shape(), b.getI1Type());
  auto op = b.create<nn::DropoutOp>(ctx.loc(), input->type, maskType, input->value,
                                    b.getF32FloatAttr(ratio), b.getBoolAttr(training), seed);
  if (failed(ctx.setOutput(0, op.getResult())))
    return failure();
  return ctx.setOutput(1, op.getMask());
}

} // namespace fsdp::onnx

// --- generators of the dynamo exporter -------------------------------------
// Range and ConstantOfShape build index and mask tensors from shapes. With
// static shapes their operands are constants, so they are evaluated here;
// a non-constant operand is refused by name.

namespace fsdp::onnx {

LogicalResult importRange(ImportContext &ctx) {
  // stash_type (opset 27) only changes float16/bfloat16 ranges, refused below.
  if (failed(ctx.opset() >= 27 ? ctx.checkAttributes({"stash_type"})
                               : ctx.checkAttributes({})))
    return failure();
  const char *names[] = {"start", "limit", "delta"};
  const Tensor *operands[3];
  for (size_t i = 0; i < 3; ++i) {
    FailureOr<const Tensor *> operand = ctx.requireConstantInput(i, names[i]);
    if (failed(operand))
      return failure();
    if ((*operand)->numElements() != 1)
      return ctx.error(Twine(names[i]) + " must be a scalar");
    operands[i] = *operand;
  }
  if (operands[1]->dtype != operands[0]->dtype || operands[2]->dtype != operands[0]->dtype)
    return ctx.error("start, limit and delta have different element types");
  using Budget = ImportContext::Budget;
  std::string error;
  std::optional<Tensor> folded = foldRange(*operands[0], *operands[1], *operands[2],
                                           ImportContext::budgetLimit(Budget::RangeElements),
                                           error);
  if (!folded)
    return ctx.error(error);
  int64_t count = folded->numElements();
  if (failed(ctx.charge(Budget::RangeElements, count, "makes " + Twine(count) + " elements")))
    return failure();
  return ctx.setConstantOutput(0, std::move(*folded));
}

LogicalResult importConstantOfShape(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"value"})))
    return failure();
  Tensor value = makeTensor<float>(DType::Float, {1}, {0.0f});
  if (const Attribute *attr = ctx.attribute("value")) {
    if (attr->kind != Attribute::Kind::Tensor)
      return ctx.error("attribute 'value' must be a tensor");
    if (attr->tensor->numElements() != 1 || !attr->tensor->hasData)
      return ctx.error("attribute 'value' must hold exactly one element");
    value = *attr->tensor;
  }
  FailureOr<Type> element = ctx.elementType(value.dtype);
  FailureOr<std::vector<int64_t>> shape = ctx.requireIntsInput(0, "shape");
  if (failed(element) || failed(shape))
    return failure();
  int64_t elements = 1;
  for (int64_t d : *shape) {
    if (d < 0)
      return ctx.error("shape " + nn::formatShape(*shape) + " has a negative entry");
    if (d != 0 && elements > (int64_t(1) << 48) / d)
      return ctx.error("shape " + nn::formatShape(*shape) + " has more than 2^48 elements");
    elements *= d;
  }
  if (elements <= kMaxFoldElements)
    return ctx.setConstantOutput(0, foldFill(value, *shape));
  // Too big to hold on the host: one scalar constant broadcast by the runtime.
  FailureOr<Value> scalar = ctx.materialize(foldReshape(value, {}));
  if (failed(scalar))
    return failure();
  return ctx.setOutput(0, ctx.builder().create<nn::ExpandOp>(
                              ctx.loc(), ctx.tensorType(*shape, *element), *scalar));
}

} // namespace fsdp::onnx
