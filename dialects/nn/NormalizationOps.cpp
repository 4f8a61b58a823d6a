//===- NormalizationOps.cpp - verifiers of softmax and layer norm ---------===//
//
// Softmax-like ops need an axis inside the rank. Layer norm needs its scale
// and bias to broadcast onto the normalized dimensions and its statistics
// to have the input's shape with those dimensions collapsed to 1.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

static LogicalResult verifyAxisInRank(Operation *op, int64_t axis, int64_t rank) {
  if (axis < 0 || axis >= rank)
    return op->emitOpError("axis ")
           << axis << " must be in [0, " << rank << ")";
  return success();
}

LogicalResult SoftmaxOp::verify() {
  return verifyAxisInRank(*this, getAxis(), shapeOf(getInput()).size());
}

LogicalResult LogSoftmaxOp::verify() {
  return verifyAxisInRank(*this, getAxis(), shapeOf(getInput()).size());
}

LogicalResult LayerNormOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  int64_t axis = getAxis();
  if (failed(verifyAxisInRank(*this, axis, input.size())))
    return failure();
  ArrayRef<int64_t> normalized = input.drop_front(axis);
  if (!broadcastsTo(shapeOf(getScale()), normalized))
    return emitOpError("scale of shape ")
           << formatShape(shapeOf(getScale()))
           << " does not broadcast to the normalized shape "
           << formatShape(normalized);
  if (getBias() && !broadcastsTo(shapeOf(getBias()), normalized))
    return emitOpError("bias of shape ")
           << formatShape(shapeOf(getBias()))
           << " does not broadcast to the normalized shape "
           << formatShape(normalized);
  Type elementType = elementTypeOf(getInput());
  if (elementTypeOf(getScale()) != elementType ||
      (getBias() && elementTypeOf(getBias()) != elementType) ||
      elementTypeOf(getResult()) != elementType)
    return emitOpError("input, scale, bias and result must have the same element type");
  if (failed(checkResultShape(*this, getResult(), input)))
    return failure();
  Shape stats = layerNormStatShape(input, axis);
  if (shapeOf(getMean()) != ArrayRef<int64_t>(stats) ||
      shapeOf(getInvStdDev()) != ArrayRef<int64_t>(stats))
    return emitOpError("mean and inv_std_dev must have shape ") << formatShape(stats);
  // Their element type may differ from the input's (ONNX's stash_type), but
  // ONNX gives both the one type U.
  if (elementTypeOf(getMean()) != elementTypeOf(getInvStdDev()))
    return emitOpError("mean and inv_std_dev must have the same element type");
  // Written as !(> 0) so that NaN is rejected too.
  if (!(getEpsilon().convertToDouble() > 0.0))
    return emitOpError("epsilon must be positive");
  return success();
}
