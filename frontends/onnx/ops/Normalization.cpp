//===- Normalization.cpp - import of Softmax, LogSoftmax, LayerNorm -------===//
//
// Opset 13 redefined Softmax and LogSoftmax from "flatten to 2-D at axis and
// normalize each row" to "normalize along one axis". Both import to the
// one-axis nn op: the old form through reshape to [outer, inner], softmax
// over axis 1, reshape back, which is exactly its definition.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

template <typename OpTy>
LogicalResult importSoftmaxLike(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"axis"})))
    return failure();
  bool legacy = ctx.opset() < 13;
  FailureOr<AxisInput> in = getInputAndAxis(ctx, legacy ? 1 : -1);
  if (failed(in))
    return failure();
  const auto &[input, axis] = *in;
  OpBuilder &b = ctx.builder();
  // Over the last axis both definitions agree, so no reshape is needed.
  if (!legacy || axis == input.rank() - 1)
    return ctx.setOutput(0, b.create<OpTy>(ctx.loc(), input.type, input.value,
                                           b.getI64IntegerAttr(axis)));
  int64_t outer = nn::numElements(input.shape().take_front(axis));
  int64_t inner = nn::numElements(input.shape().drop_front(axis));
  auto flatType = ctx.tensorType({outer, inner}, input.element());
  Value flat = b.create<nn::ReshapeOp>(ctx.loc(), flatType, input.value);
  Value normalized = b.create<OpTy>(ctx.loc(), flatType, flat, b.getI64IntegerAttr(1));
  return ctx.setOutput(0, b.create<nn::ReshapeOp>(ctx.loc(), input.type, normalized));
}

} // namespace

LogicalResult importSoftmax(ImportContext &ctx) {
  return importSoftmaxLike<nn::SoftmaxOp>(ctx);
}

LogicalResult importLogSoftmax(ImportContext &ctx) {
  return importSoftmaxLike<nn::LogSoftmaxOp>(ctx);
}

LogicalResult importLayerNormalization(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"axis", "epsilon", "stash_type"})))
    return failure();
  int64_t axisAttr = ctx.intAttr("axis", -1);
  float epsilon = ctx.floatAttr("epsilon", 1e-5f);
  if (ctx.intAttr("stash_type", 1) != 1)
    return ctx.error("only stash_type = 1 (float) is supported");
  FailureOr<InputInfo> input = getInput(ctx, 0), scale = getInput(ctx, 1);
  if (failed(input) || failed(scale) || ctx.failed())
    return failure();
  FailureOr<int64_t> axis = nn::normalizeAxis(axisAttr, input->rank(), ctx.errorFn());
  if (failed(axis))
    return failure();
  Value bias;
  if (ctx.hasInput(2)) {
    FailureOr<InputInfo> b = getInput(ctx, 2);
    if (failed(b))
      return failure();
    bias = b->value;
  }
  auto statType = ctx.tensorType(nn::layerNormStatShape(input->shape(), *axis),
                                 input->element());
  OpBuilder &b = ctx.builder();
  auto op = b.create<nn::LayerNormOp>(ctx.loc(), input->type, statType, statType,
                                      input->value, scale->value, bias,
                                      b.getI64IntegerAttr(*axis),
                                      b.getF32FloatAttr(epsilon));
  if (failed(ctx.setOutput(0, op.getResult())) || failed(ctx.setOutput(1, op.getMean())))
    return failure();
  return ctx.setOutput(2, op.getInvStdDev());
}

} // namespace fsdp::onnx
