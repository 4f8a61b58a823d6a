//===- CollectiveOps.cpp - verifiers of the collectives -------------------===//
//
// A group is a sorted list of distinct ranks; all_gather multiplies dim 0
// by the group size and reduce_scatter divides it (evenly: flat shards are
// padded so every rank holds the same count); other dims and the element
// type are unchanged; reductions are "sum" or "avg".
//
//===----------------------------------------------------------------------===//

#include "dialects/fsdp/FSDPDialect.h"

using namespace mlir;
using namespace fsdp::dist;

static LogicalResult verifyGroup(Operation *op, ArrayRef<int64_t> group) {
  if (group.empty())
    return op->emitOpError("group must list at least one rank");
  for (size_t i = 0; i < group.size(); ++i)
    if (group[i] < 0 || (i > 0 && group[i] <= group[i - 1]))
      return op->emitOpError("group must be sorted, distinct, non-negative ranks");
  return success();
}

static LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction != "sum" && reduction != "avg")
    return op->emitOpError("reduction must be \"sum\" or \"avg\", not \"") << reduction << "\"";
  return success();
}

/// `big` is `small` with dim 0 multiplied by `factor`, same element type.
static LogicalResult verifyDim0Scaled(Operation *op, RankedTensorType small, RankedTensorType big,
                                      int64_t factor) {
  if (small.getElementType() != big.getElementType())
    return op->emitOpError("input and result must have the same element type");
  if (small.getRank() < 1 || small.getRank() != big.getRank() ||
      small.getShape().drop_front() != big.getShape().drop_front() ||
      small.getDimSize(0) * factor != big.getDimSize(0))
    return op->emitOpError("the full tensor's dim 0 must be the shard's times the group size (")
           << factor << ")";
  return success();
}

LogicalResult AllGatherOp::verify() {
  if (failed(verifyGroup(*this, getGroup())))
    return failure();
  return verifyDim0Scaled(*this, getInput().getType(), getResult().getType(), getGroup().size());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyGroup(*this, getGroup())) || failed(verifyReduction(*this, getReduction())))
    return failure();
  return verifyDim0Scaled(*this, getResult().getType(), getInput().getType(), getGroup().size());
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyGroup(*this, getGroup())))
    return failure();
  return verifyReduction(*this, getReduction());
}
