//===- LinearAlgebraOps.cpp - verifiers of matmul and gemm ----------------===//
//
// Shape checks for matrix products; Gemm also requires its operands and
// optional bias to share the result's element type.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

LogicalResult MatMulOp::verify() {
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return matmulShape(shapeOf(getLhs()), shapeOf(getRhs()), error);
  });
}

LogicalResult GemmOp::verify() {
  Type elementType = elementTypeOf(getResult());
  if (elementTypeOf(getA()) != elementType || elementTypeOf(getB()) != elementType ||
      (getC() && elementTypeOf(getC()) != elementType))
    return emitOpError("operands and result must have the same element type");
  std::optional<ArrayRef<int64_t>> c;
  if (getC())
    c = shapeOf(getC());
  return verifyShapeRule(*this, getResult(), [&](ErrorFn error) {
    return gemmShape(shapeOf(getA()), shapeOf(getB()), c, getTransA(),
                     getTransB(), error);
  });
}
