//===- TorchExportOps.cpp - verifiers of the torch 2.x export ops ---------===//
//
// Gelu and its gradient accept torch's two approximations by name; Pad and
// Tile check their result against the shared shape rules (ShapeRules.h, the
// importer's too); CumSum checks its axis. Pad's value must be one element
// of the input's type, so integer padding (the -100 of a label shift) stays
// exact rather than travelling through a float attribute.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

static LogicalResult verifyApproximate(Operation *op, StringRef approximate) {
  if (approximate == "none" || approximate == "tanh")
    return success();
  return op->emitOpError("approximate must be \"none\" or \"tanh\", got \"")
         << approximate << "\"";
}

LogicalResult GeluOp::verify() { return verifyApproximate(*this, getApproximate()); }
LogicalResult GeluGradOp::verify() { return verifyApproximate(*this, getApproximate()); }

LogicalResult PadOp::verify() {
  if (!shapeOf(getValue()).empty())
    return emitOpError("value must be a rank-0 tensor, got shape ")
           << formatShape(shapeOf(getValue()));
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return padShape(shapeOf(getInput()), getPads(), error);
  });
}

LogicalResult TileOp::verify() {
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return tileShape(shapeOf(getInput()), getRepeats(), error);
  });
}

LogicalResult CumSumOp::verify() {
  int64_t rank = shapeOf(getInput()).size();
  if (getAxis() < 0 || getAxis() >= rank)
    return emitOpError("axis ") << getAxis() << " is outside [0, " << rank << ")";
  return success();
}
