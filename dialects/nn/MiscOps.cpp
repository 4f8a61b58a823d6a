//===- MiscOps.cpp - constant and dropout ---------------------------------===//
//
// The constant's attribute has exactly its result type (an ODS constraint, so
// unsigned and bool constants round-trip faithfully); dropout's ratio
// must be a probability in [0, 1) and its mask must match the input shape.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

OpFoldResult ConstantOp::fold(FoldAdaptor) { return getValue(); }

LogicalResult DropoutOp::verify() {
  double ratio = getRatio().convertToDouble();
  if (!(ratio >= 0.0 && ratio < 1.0))
    return emitOpError("ratio must be in [0, 1), got ") << ratio;
  if (getResult().getType() != getInput().getType())
    return emitOpError("result must have the input's type");
  if (shapeOf(getMask()) != shapeOf(getInput()))
    return emitOpError("mask must have the input's shape");
  return success();
}
