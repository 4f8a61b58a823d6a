//===- GradientOps.cpp - verifiers of the backward-only ops ---------------===//
//
// Each gradient op is checked against the forward op it differentiates: the
// shape rule of the forward op, applied to the gradient op's result (the
// forward operand's shape), must give the incoming gradient's shape. So a
// gradient op in the IR always has a forward op it could belong to.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

template <typename Op> static LogicalResult verifySoftmaxGradLike(Op op) {
  int64_t rank = shapeOf(op.getOutput()).size();
  int64_t axis = op.getAxis(); // signed: the attribute's accessor is unsigned
  if (axis < 0 || axis >= rank)
    return op.emitOpError("axis ") << axis << " must be in [0, " << rank << ")";
  return success();
}

LogicalResult SoftmaxGradOp::verify() { return verifySoftmaxGradLike(*this); }
LogicalResult LogSoftmaxGradOp::verify() { return verifySoftmaxGradLike(*this); }

LogicalResult LayerNormGradOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(input.size()))
    return emitOpError("axis ") << axis << " must be in [0, " << input.size() << ")";
  ArrayRef<int64_t> normalized = input.drop_front(axis);
  Type type = elementTypeOf(getInput());
  for (Value v : {getScale(), getScaleGrad(), getBiasGrad()})
    if (shapeOf(v) != normalized || elementTypeOf(v) != type)
      return emitOpError("scale, scale_grad and bias_grad must have the normalized shape ")
             << formatShape(normalized) << " and the input's element type";
  Shape stats = layerNormStatShape(input, axis);
  if (shapeOf(getMean()) != ArrayRef<int64_t>(stats) ||
      shapeOf(getInvStdDev()) != ArrayRef<int64_t>(stats))
    return emitOpError("mean and inv_std_dev must have shape ") << formatShape(stats);
  if (getGrad().getType() != getInput().getType() ||
      getInputGrad().getType() != getInput().getType())
    return emitOpError("grad and input_grad must have the input's type");
  return success();
}

LogicalResult GatherGradOp::verify() {
  if (elementTypeOf(getResult()) != elementTypeOf(getGrad()))
    return emitOpError("result must have the gradient's element type");
  auto emit = [&](const Twine &message) { emitOpError(message); };
  FailureOr<Shape> gathered =
      gatherShape(shapeOf(getResult()), shapeOf(getIndices()), getAxis(), emit);
  if (failed(gathered))
    return failure();
  if (ArrayRef<int64_t>(*gathered) != shapeOf(getGrad()))
    return emitOpError("gathering ") << formatShape(shapeOf(getResult())) << " gives "
                                     << formatShape(*gathered) << ", not the gradient's "
                                     << formatShape(shapeOf(getGrad()));
  return success();
}

LogicalResult SliceGradOp::verify() {
  auto emit = [&](const Twine &message) { emitOpError(message); };
  FailureOr<Shape> sliced = sliceShape(shapeOf(getResult()), getStarts(), getEnds(),
                                       getSteps(), emit);
  if (failed(sliced))
    return failure();
  if (ArrayRef<int64_t>(*sliced) != shapeOf(getGrad()))
    return emitOpError("slicing ") << formatShape(shapeOf(getResult())) << " gives "
                                   << formatShape(*sliced) << ", not the gradient's "
                                   << formatShape(shapeOf(getGrad()));
  return success();
}

/// The loss gradient has the forward loss's shape and the scores' type.
template <typename Op>
static LogicalResult verifyLossGrad(Op op, Value scores, Value labels, Value weights) {
  Type type = elementTypeOf(scores);
  if (elementTypeOf(op.getLossGrad()) != type || (weights && elementTypeOf(weights) != type))
    return op.emitOpError("loss_grad, weights and result must share the scores' element type");
  std::optional<ArrayRef<int64_t>> weightShape;
  if (weights)
    weightShape = shapeOf(weights);
  return verifyShapeRule(op, op.getLossGrad(), [&](ErrorFn error) {
    return classificationLossShape(shapeOf(scores), shapeOf(labels), weightShape,
                                   op.getReduction(), error);
  });
}

LogicalResult SoftmaxCrossEntropyGradOp::verify() {
  if (getResult().getType() != getLogProb().getType())
    return emitOpError("result must have log_prob's type");
  return verifyLossGrad(*this, getLogProb(), getLabels(), getWeights());
}

LogicalResult NllLossGradOp::verify() {
  return verifyLossGrad(*this, getResult(), getTarget(), getWeight());
}

LogicalResult ReduceMaxGradOp::verify() {
  if (getResult().getType() != getInput().getType())
    return emitOpError("result must have the input's type");
  auto emit = [&](const Twine &message) { emitOpError(message); };
  FailureOr<Shape> kept = reduceShape(shapeOf(getInput()), getAxes(), /*keepdims=*/true, emit);
  if (failed(kept))
    return failure();
  if (shapeOf(getOutput()) != ArrayRef<int64_t>(*kept) ||
      shapeOf(getGrad()) != ArrayRef<int64_t>(*kept))
    return emitOpError("output and grad must have the kept-dims shape ") << formatShape(*kept);
  if (elementTypeOf(getOutput()) != elementTypeOf(getInput()) ||
      elementTypeOf(getGrad()) != elementTypeOf(getInput()))
    return emitOpError("output and grad must have the input's element type");
  return success();
}

LogicalResult DropoutGradOp::verify() {
  if (shapeOf(getMask()) != shapeOf(getGrad()))
    return emitOpError("mask must have the gradient's shape");
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1)");
  return success();
}
