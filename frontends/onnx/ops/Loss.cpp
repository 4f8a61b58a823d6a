//===- Loss.cpp - import of SoftmaxCrossEntropyLoss and NLL loss ----------===//
//
// Both losses keep ONNX's reduction and ignore_index as attributes; the
// shape rule (shared with the verifier) checks scores, labels and weights.
//
//===----------------------------------------------------------------------===//

#include "frontends/onnx/OpHandlers.h"
#include "frontends/onnx/ops/HandlerUtils.h"

using namespace mlir;
using namespace fsdp::onnx::detail;

namespace fsdp::onnx {
namespace {

struct LossOperands {
  InputInfo scores, labels;
  Value weights;
  std::string reduction;
  IntegerAttr ignoreIndex;
  RankedTensorType lossType;
};

FailureOr<LossOperands> readLossOperands(ImportContext &ctx) {
  if (failed(ctx.checkAttributes({"reduction", "ignore_index"})))
    return failure();
  LossOperands operands;
  operands.reduction = ctx.stringAttr("reduction", "mean");
  if (ctx.attribute("ignore_index"))
    operands.ignoreIndex = ctx.builder().getI64IntegerAttr(ctx.intAttr("ignore_index", 0));
  FailureOr<InputInfo> scores = getInput(ctx, 0), labels = getInput(ctx, 1);
  if (failed(scores) || failed(labels) || ctx.failed())
    return failure();
  operands.scores = *scores;
  operands.labels = *labels;
  std::optional<ArrayRef<int64_t>> weightShape;
  if (ctx.hasInput(2)) {
    FailureOr<InputInfo> weights = getInput(ctx, 2);
    if (failed(weights))
      return failure();
    operands.weights = weights->value;
    weightShape = weights->shape();
  }
  FailureOr<nn::Shape> shape = nn::classificationLossShape(
      scores->shape(), labels->shape(), weightShape, operands.reduction, ctx.errorFn());
  if (failed(shape))
    return failure();
  operands.lossType = ctx.tensorType(*shape, scores->element());
  return operands;
}

} // namespace

LogicalResult importSoftmaxCrossEntropyLoss(ImportContext &ctx) {
  FailureOr<LossOperands> in = readLossOperands(ctx);
  if (failed(in))
    return failure();
  OpBuilder &b = ctx.builder();
  auto op = b.create<nn::SoftmaxCrossEntropyOp>(
      ctx.loc(), in->lossType, in->scores.type, in->scores.value, in->labels.value,
      in->weights, b.getStringAttr(in->reduction), in->ignoreIndex);
  if (failed(ctx.setOutput(0, op.getLoss())))
    return failure();
  return ctx.setOutput(1, op.getLogProb());
}

LogicalResult importNegativeLogLikelihoodLoss(ImportContext &ctx) {
  FailureOr<LossOperands> in = readLossOperands(ctx);
  if (failed(in))
    return failure();
  OpBuilder &b = ctx.builder();
  auto op = b.create<nn::NllLossOp>(ctx.loc(), in->lossType, in->scores.value,
                                    in->labels.value, in->weights,
                                    b.getStringAttr(in->reduction), in->ignoreIndex);
  return ctx.setOutput(0, op.getLoss());
}

} // namespace fsdp::onnx
