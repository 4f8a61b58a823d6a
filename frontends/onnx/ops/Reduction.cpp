//===- Reduction.cpp - import of ReduceSum, ReduceMax, ReduceMean ---------===//
//
// Resolves ONNX's axis conventions (attribute before opset 13 for ReduceSum,
// an optional constant input after; no axes means all axes unless
// noop_with_empty_axes) into the explicit sorted axes nn reductions take.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

template <typename OpTy>
LogicalResult importReduce(ImportContext &ctx, bool axesAsInput) {
  if (failed(ctx.checkAttributes({"axes", "keepdims", "noop_with_empty_axes"})))
    return failure();
  bool keepdims = ctx.intAttr("keepdims", 1) != 0;
  bool noopWithEmptyAxes = ctx.intAttr("noop_with_empty_axes", 0) != 0;
  std::vector<int64_t> axes;
  if (axesAsInput) {
    if (ctx.attribute("axes"))
      return ctx.error("axes is an input since opset 13, not an attribute");
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
  return ctx.setOutput(0, b.create<OpTy>(ctx.loc(), ctx.tensorType(*shape, input->element()),
                                         input->value, b.getDenseI64ArrayAttr(*normalized),
                                         b.getBoolAttr(keepdims)));
}

} // namespace

LogicalResult importReduceSum(ImportContext &ctx) {
  return importReduce<nn::ReduceSumOp>(ctx, ctx.opset() >= 13);
}

LogicalResult importReduceMax(ImportContext &ctx) {
  return importReduce<nn::ReduceMaxOp>(ctx, false);
}

LogicalResult importReduceMean(ImportContext &ctx) {
  return importReduce<nn::ReduceMeanOp>(ctx, false);
}

} // namespace fsdp::onnx
