//===- ShapeOps.cpp - verifiers of data-movement ops ----------------------===//
//
// Reshape keeps the element count; transpose, concat, slice and gather
// follow their shape rules; split's results must tile the input along the
// axis; expand's result must be a broadcast of its input; trilu needs a
// matrix.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"
#include "llvm/Support/MathExtras.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

LogicalResult ReshapeOp::verify() {
  std::optional<int64_t> in = checkedNumElements(shapeOf(getInput()));
  std::optional<int64_t> out = checkedNumElements(shapeOf(getResult()));
  if (!in || !out)
    return emitOpError("element count overflows int64");
  if (*in != *out)
    return emitOpError("cannot reshape ")
           << formatShape(shapeOf(getInput())) << " to "
           << formatShape(shapeOf(getResult()))
           << ": element counts differ";
  return success();
}

LogicalResult TransposeOp::verify() {
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return transposeShape(shapeOf(getInput()), getPerm(), error);
  });
}

LogicalResult ConcatOp::verify() {
  SmallVector<ArrayRef<int64_t>> shapes;
  for (Value input : getInputs())
    shapes.push_back(shapeOf(input));
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return concatShape(shapes, getAxis(), error);
  });
}

LogicalResult SplitOp::verify() {
  ArrayRef<int64_t> input = shapeOf(getInput());
  int64_t axis = getAxis();
  if (axis < 0 || axis >= static_cast<int64_t>(input.size()))
    return emitOpError("axis ") << axis << " must be in [0, " << input.size() << ")";
  if (getResults().empty())
    return emitOpError("needs at least one result");
  int64_t total = 0;
  for (Value result : getResults()) {
    ArrayRef<int64_t> shape = shapeOf(result);
    if (elementTypeOf(result) != elementTypeOf(getInput()))
      return emitOpError("results must have the input's element type");
    bool ok = shape.size() == input.size();
    for (size_t i = 0; ok && i < shape.size(); ++i)
      ok = static_cast<int64_t>(i) == axis || shape[i] == input[i];
    if (!ok)
      return emitOpError("result shape ")
             << formatShape(shape) << " differs from the input "
             << formatShape(input) << " outside axis " << axis;
    if (llvm::AddOverflow(total, shape[axis], total))
      return emitOpError("result sizes along axis ") << axis << " overflow int64";
  }
  if (total != input[axis])
    return emitOpError("result sizes along axis ")
           << axis << " add up to " << total << ", not " << input[axis];
  return success();
}

LogicalResult SliceOp::verify() {
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return sliceShape(shapeOf(getInput()), getStarts(), getEnds(), getSteps(),
                      error);
  });
}

LogicalResult ExpandOp::verify() {
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return broadcastShapes({shapeOf(getInput()), shapeOf(getResult())}, error);
  });
}

LogicalResult GatherOp::verify() {
  if (elementTypeOf(getData()) != elementTypeOf(getResult()))
    return emitOpError("result must have the data's element type");
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return gatherShape(shapeOf(getData()), shapeOf(getIndices()), getAxis(),
                       error);
  });
}

LogicalResult TriluOp::verify() {
  if (shapeOf(getInput()).size() < 2)
    return emitOpError("input must have rank >= 2");
  return success();
}
