//===- FusedOps.cpp - verifier of nn.fused --------------------------------===//
//
// The program must be one the runtime can execute: known op codes, operands
// that refer to inputs or earlier ops, unary ops without a second operand,
// results that are op values, one element type throughout (f32, bf16 or
// f16: the runtime rounds each op of a bf16/f16 program to it, and a mixed
// program has no such type), one result shape, and inputs of that shape or
// a single element.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

LogicalResult FusedOp::verify() {
  ArrayRef<int64_t> program = getProgram();
  if (program.empty() || program.size() % 3 != 0)
    return emitOpError("program must be a non-empty list of [code, a, b] triples");
  if (getResults().empty() || getResultsOf().size() != getResults().size())
    return emitOpError("needs one `results` entry per result");
  int64_t numInputs = getInputs().size(), numOps = program.size() / 3;
  for (int64_t k = 0; k < numOps; ++k) {
    int64_t code = program[3 * k], a = program[3 * k + 1], b = program[3 * k + 2];
    int64_t self = numInputs + k;
    bool unary = code >= 4 && code <= 11;
    if (code < 0 || code > 15)
      return emitOpError("op ") << k << " has unknown code " << code;
    if (a < 0 || a >= self || (unary ? b != -1 : (b < 0 || b >= self)))
      return emitOpError("op ") << k << " must read inputs or earlier ops"
                                << (unary ? " and have b = -1" : "");
  }
  for (int64_t v : getResultsOf())
    if (v < numInputs || v >= numInputs + numOps)
      return emitOpError("result value ") << v << " is not an op's value";
  ArrayRef<int64_t> shape = shapeOf(getResults()[0]);
  Type element = elementTypeOf(getResults()[0]);
  if (!element.isF32() && !element.isBF16() && !element.isF16())
    return emitOpError("results must be f32, bf16 or f16, not ") << element;
  for (Value r : getResults())
    if (shapeOf(r) != shape || elementTypeOf(r) != element)
      return emitOpError("results must all be of one element type and shape");
  for (Value in : getInputs()) {
    auto type = cast<RankedTensorType>(in.getType());
    if (type.getElementType() != element ||
        (type.getShape() != shape && checkedNumElements(type.getShape()) != 1))
      return emitOpError("inputs must be ")
             << element << " (the results' element type) with the results' shape or one element";
  }
  return success();
}
