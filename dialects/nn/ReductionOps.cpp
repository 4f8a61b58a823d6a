//===- ReductionOps.cpp - verifiers of reductions -------------------------===//
//
// All reductions share one rule: explicit sorted axes, keepdims decides
// whether reduced dimensions remain as size 1.
//
//===----------------------------------------------------------------------===//

#include "dialects/nn/VerifyUtils.h"

using namespace mlir;
using namespace fsdp::nn;
using namespace fsdp::nn::detail;

template <typename ReduceOp>
static LogicalResult verifyReduce(ReduceOp op) {
  return verifyShapeRule(op, op.getResult(), [&](ErrorFn error) {
    return reduceShape(shapeOf(op.getInput()), op.getAxes(), op.getKeepdims(),
                       error);
  });
}

LogicalResult ReduceSumOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMaxOp::verify() { return verifyReduce(*this); }
LogicalResult ReduceMeanOp::verify() { return verifyReduce(*this); }
