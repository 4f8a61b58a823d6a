//===- ElementwiseOps.cpp - verifiers of broadcasting elementwise ops -----===//
//
// Binary arithmetic, Pow and Where check that the result shape is the numpy
// broadcast of their operands; element types are checked by ODS traits,
// except for add/sub/mul/div, which also take torch's wrapped number (a
// bf16/f16 tensor with a rank-0 f32 operand, NNElementwiseOps.td) and so
// check their element types here.
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

/// Equal element types everywhere, or torch's wrapped number: one operand a
/// bf16/f16 tensor whose type the result has, the other a rank-0 f32.
static LogicalResult verifyArithmetic(Operation *op) {
  Value lhs = op->getOperand(0), rhs = op->getOperand(1);
  Type result = elementTypeOf(op->getResult(0));
  Type lhsType = elementTypeOf(lhs), rhsType = elementTypeOf(rhs);
  if (lhsType != rhsType || lhsType != result) {
    auto wrappedScalar = [&](Value tensor, Value scalar) {
      Type t = elementTypeOf(tensor);
      return (t.isBF16() || t.isF16()) && t == result && elementTypeOf(scalar).isF32() &&
             shapeOf(scalar).empty();
    };
    if (!wrappedScalar(lhs, rhs) && !wrappedScalar(rhs, lhs))
      return op->emitOpError("requires the same element type for all operands and results, "
                             "or a bf16/f16 tensor and a rank-0 f32 operand with the "
                             "tensor's result type; got ")
             << lhsType << " and " << rhsType << " -> " << result;
  }
  return verifyBroadcast(op);
}

LogicalResult AddOp::verify() { return verifyArithmetic(*this); }
LogicalResult SubOp::verify() { return verifyArithmetic(*this); }
LogicalResult MulOp::verify() { return verifyArithmetic(*this); }
LogicalResult DivOp::verify() { return verifyArithmetic(*this); }

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
