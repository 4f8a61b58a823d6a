//===- Misc.cpp - import of Constant and Dropout --------------------------===//
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
