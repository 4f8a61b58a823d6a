//===- LossGradients.cpp - gradients of the classification losses ---------===//
//
// Only the scores (or log-probabilities) are differentiated: labels are
// integers and class weights are constants of the loss, as in torch's
// F.cross_entropy / F.nll_loss. Softmax cross-entropy also returns its
// log-probabilities; a gradient reaching them adds log-softmax's gradient.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/gradients/GradientBuilder.h"

using namespace mlir;
using namespace fsdp::nn;

LogicalResult SoftmaxCrossEntropyOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                                    SmallVectorImpl<Value> &out) {
  GradientBuilder g(builder, getLoc());
  Value scoresGrad;
  if (grads[0])
    scoresGrad = builder.create<SoftmaxCrossEntropyGradOp>(
        getLoc(), getScores().getType(), grads[0], getLogProb(), getLabels(), getWeights(),
        getReductionAttr(), getIgnoreIndexAttr());
  if (grads[1]) {
    Value viaLogProb = builder.create<LogSoftmaxGradOp>(getLoc(), getScores().getType(),
                                                        getLogProb(), grads[1],
                                                        builder.getI64IntegerAttr(1));
    scoresGrad = scoresGrad ? g.add(scoresGrad, viaLogProb) : viaLogProb;
  }
  out.push_back(scoresGrad);
  out.push_back(Value()); // labels
  if (getWeights())
    out.push_back(Value());
  return success();
}

LogicalResult NllLossOp::buildGradients(OpBuilder &builder, ArrayRef<Value> grads,
                                        SmallVectorImpl<Value> &out) {
  out.push_back(builder.create<NllLossGradOp>(getLoc(), getInput().getType(), grads[0],
                                              getTarget(), getWeight(), getReductionAttr(),
                                              getIgnoreIndexAttr()));
  out.push_back(Value()); // target
  if (getWeight())
    out.push_back(Value());
  return success();
}
