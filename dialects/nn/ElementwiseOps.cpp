//===- ElementwiseOps.cpp - verifiers of broadcasting elementwise ops -----===//
//
// Binary arithmetic, Pow and Where check that the result shape is the numpy
// broadcast of their operands; element types are checked by ODS traits.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

static LogicalResult verifyBroadcast(Operation *op) {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value operand : op->getOperands())
    shapes.push_back(shapeOf(operand));
  return verifyShapeRule(op, op->getResult(0), [&](ErrorFn error) {
    return broadcastShapes(shapes, error);
  });
}

LogicalResult AddOp::verify() { return verifyBroadcast(*this); }
LogicalResult SubOp::verify() { return verifyBroadcast(*this); }
LogicalResult MulOp::verify() { return verifyBroadcast(*this); }
LogicalResult DivOp::verify() { return verifyBroadcast(*this); }

LogicalResult PowOp::verify() {
  if (elementTypeOf(getResult()) != elementTypeOf(getBase()))
    return emitOpError("result element type must be the base's element type");
  return verifyBroadcast(*this);
}

LogicalResult WhereOp::verify() {
  if (elementTypeOf(getX()) != elementTypeOf(getY()) ||
      elementTypeOf(getX()) != elementTypeOf(getResult()))
    return emitOpError("x, y and result must have the same element type");
  return verifyBroadcast(*this);
}

// Comparisons, logic, max and min (torch 2.x's mask chains and SDPA guard).

LogicalResult CompareOp::verify() {
  StringRef p = getPredicate();
  if (p != "eq" && p != "lt" && p != "le" && p != "gt" && p != "ge")
    return emitOpError("predicate must be one of eq, lt, le, gt, ge; got '") << p << "'";
  Type element = elementTypeOf(getLhs());
  if (element != elementTypeOf(getRhs()))
    return emitOpError("operands must have the same element type");
  if (element.isInteger(1) && p != "eq")
    return emitOpError("bool operands only compare with eq");
  return verifyBroadcast(*this);
}

LogicalResult LogicalOp::verify() {
  StringRef op = getOp();
  if (op != "and" && op != "or" && op != "xor")
    return emitOpError("op must be one of and, or, xor; got '") << op << "'";
  return verifyBroadcast(*this);
}

LogicalResult MaxOp::verify() { return verifyBroadcast(*this); }
LogicalResult MinOp::verify() { return verifyBroadcast(*this); }
