//===- Reduction.cpp - import of ReduceSum, ReduceMax, ReduceMean ---------===//
//
// Resolves ONNX's axis conventions (an attribute before opset 13 for
// ReduceSum and before 18 for ReduceMax/ReduceMean, an optional constant
// input after; no axes means all axes unless noop_with_empty_axes) into the
// explicit sorted axes nn reductions take. ReduceMax takes bool from opset
// 20 (False < True): it is computed as the max of the values cast to float,
// so an empty reduction (-inf) must map to false.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

/// `axesInputSince`: the opset from which axes are an input.
template <typename OpTy>
LogicalResult importReduce(ImportContext &ctx, int64_t axesInputSince) {
  bool axesAsInput = ctx.opset() >= axesInputSince;
  if (failed(ctx.checkAttributes({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  bool noopWithEmptyAxes = ctx.intAttr("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (axesAsInput) {
    if (ctx.attribute("axes"))
      return ctx.error("axes is an input since opset " + Twine(axesInputSince) +
                       ", not an attribute");
    if (ctx.hasInput(1)) {
      FailureOr<std::vector<int64_t>> values = ctx.requireIntsInput(1, "axes");
      if (failed(values))
        return failure();
      axes = *values;
    }
  } else if (std::optional<std::vector<int64_t>> attr = ctx.intsAttr("axes")) {
    axes = *attr;
  }
  FailureOr<InputInfo> input = getInput(ctx, 0);
  if (failed(input) || ctx.failed())
    return failure();
  if (axes.empty()) {
    if (noopWithEmptyAxes)
      return ctx.setOutput(0, input->value);
    for (int64_t i = 0; i < input->rank(); ++i)
      axes.push_back(i);
  }
  FailureOr<SmallVector<int64_t>> normalized = normalizeAxes(ctx, axes, input->rank());
  if (failed(normalized))
    return failure();
  FailureOr<nn::Shape> shape =
      nn::reduceShape(input->shape(), *normalized, keepdims, ctx.errorFn());
  if (failed(shape))
    return failure();
  OpBuilder &b = ctx.builder();
  Value value = input->value;
  Type element = input->element();
  bool isBool = element.isInteger(1);
  if (isBool) {
    if (!std::is_same_v<OpTy, nn::ReduceMaxOp> || ctx.opset() < 20)
      return ctx.error("bool input is not supported (ReduceMax takes bool from opset 20)");
    // max over {0, 1} is exact in float.
    element = b.getF32Type();
    value = b.create<nn::CastOp>(ctx.loc(), ctx.tensorType(input->shape(), element), value);
  }
  Value result = b.create<OpTy>(ctx.loc(), ctx.tensorType(*shape, element), value,
                                b.getDenseI64ArrayAttr(*normalized), b.getBoolAttr(keepdims));
  if (isBool) {
    // An empty reduction gives -inf, whose cast would be true; relu makes
    // it 0, false, the identity of max over bools.
    result = b.create<nn::ReluOp>(ctx.loc(), result.getType(), result);
    result = b.create<nn::CastOp>(ctx.loc(), ctx.tensorType(*shape, input->element()), result);
  }
  return ctx.setOutput(0, result);
}

} // namespace

LogicalResult importReduceSum(ImportContext &ctx) {
  return importReduce<nn::ReduceSumOp>(ctx, 13);
}

LogicalResult importReduceMax(ImportContext &ctx) {
  return importReduce<nn::ReduceMaxOp>(ctx, 18);
}

LogicalResult importReduceMean(ImportContext &ctx) {
  return importReduce<nn::ReduceMeanOp>(ctx, 18);
}

} // namespace fsdp::onnx
