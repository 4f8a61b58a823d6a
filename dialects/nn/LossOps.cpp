//===- LossOps.cpp - verifiers of classification losses -------------------===//
//
// Scores `[N, C, d...]`, labels `[N, d...]`, weights `[C]`, and a loss whose
// shape depends on the reduction; softmax cross-entropy also returns the
// log-probabilities, shaped like the scores.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

template <typename LossOp>
static LogicalResult verifyLoss(LossOp op, Value scores, Value labels,
                                Value weights) {
  std::optional<ArrayRef<int64_t>> weightShape;
  if (weights) {
    weightShape = shapeOf(weights);
    if (elementTypeOf(weights) != elementTypeOf(scores))
      return op.emitOpError("weights must have the scores' element type");
  }
  if (elementTypeOf(op.getLoss()) != elementTypeOf(scores))
    return op.emitOpError("loss must have the scores' element type");
  return verifyShapeRule(op, op.getLoss(), [&](ErrorFn error) {
    return classificationLossShape(shapeOf(scores), shapeOf(labels),
                                   weightShape, op.getReduction(), error);
  });
}

LogicalResult SoftmaxCrossEntropyOp::verify() {
  if (getLogProb().getType() != getScores().getType())
    return emitOpError("log_prob must have the scores' type");
  return verifyLoss(*this, getScores(), getLabels(), getWeights());
}

LogicalResult NllLossOp::verify() {
  return verifyLoss(*this, getInput(), getTarget(), getWeight());
}
