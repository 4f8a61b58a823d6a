//===- OpCost.cpp - the cost model's roofline for one op of the IR --------===//
//
// The reduction length K comes from the first operand as the plan-level
// model reads it from the first input buffer: its last dimension (the one
// before it for a transposed gemm operand), or its only one when 1-D.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/OpCost.h"

#include "dialects/nn/NNDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace fsdp {
namespace {

/// K of a matrix product whose first operand has type `lhs`.
int64_t reductionLength(Type lhs, bool transposed) {
  auto type = dyn_cast<RankedTensorType>(lhs);
  if (!type || type.getRank() == 0)
    return 0;
  int64_t rank = type.getRank();
  return type.getDimSize(rank == 1 ? 0 : (transposed ? rank - 2 : rank - 1));
}

} // namespace

uint64_t tensorBytes(Type type) {
  auto shaped = dyn_cast<ShapedType>(type);
  if (!shaped || !shaped.hasStaticShape() || !shaped.getElementType().isIntOrFloat())
    return 0;
  uint64_t bits = shaped.getElementTypeBitWidth();
  return static_cast<uint64_t>(shaped.getNumElements()) * ((bits + 7) / 8);
}

InstructionCost opCost(Operation *op, const DeviceProfile &device) {
  uint64_t bytes = 0;
  for (Value v : op->getOperands())
    bytes += tensorBytes(v.getType());
  for (Value v : op->getResults())
    bytes += tensorBytes(v.getType());
  double flops = 0;
  bool half = false;
  if (isa<nn::MatMulOp, nn::GemmOp>(op) && op->getNumResults() == 1) {
    bool transposed = false;
    if (auto gemm = dyn_cast<nn::GemmOp>(op))
      transposed = gemm.getTransA();
    auto result = cast<ShapedType>(op->getResult(0).getType());
    flops = matmulFlops(result.getNumElements(),
                        reductionLength(op->getOperand(0).getType(), transposed));
    Type operand = getElementTypeOrSelf(op->getOperand(0).getType());
    half = operand.isBF16() || operand.isF16();
  }
  auto attention = [&](Value query, Value value, bool causal, bool backward) {
    flops = attentionFlops(cast<ShapedType>(query.getType()).getShape(),
                           cast<ShapedType>(value.getType()).getShape(), causal, backward);
    Type operand = getElementTypeOrSelf(query.getType());
    half = operand.isBF16() || operand.isF16();
  };
  if (auto forward = dyn_cast<nn::AttentionOp>(op))
    attention(forward.getQuery(), forward.getValue(), forward.getIsCausal(), false);
  if (auto backward = dyn_cast<nn::AttentionGradOp>(op))
    attention(backward.getQuery(), backward.getValue(), backward.getIsCausal(), true);
  return computeKernelCost(flops, bytes, half, device);
}

} // namespace fsdp
