//===- CollectiveOps.cpp - verifiers of the collectives -------------------===//
//
// `groups` partitions ranks 0..n-1 into groups of `group_size` ranks, each
// listed in ascending order; all_gather multiplies dim 0 by the group size
// and reduce_scatter divides it (evenly: flat shards are padded so every
// rank holds the same count); other dims and the element type are
// unchanged; reductions are "sum", "avg" or "max".
//
//===----------------------------------------------------------------------===//

#include "dialects/fsdp/FSDPDialect.h"

#include <vector>

using namespace mlir;
using namespace fsdp::dist;

static LogicalResult verifyGroups(Operation *op, ArrayRef<int64_t> groups, int64_t groupSize) {
  if (groupSize < 1)
    return op->emitOpError("group_size must be at least 1");
  if (groups.empty() || groups.size() % groupSize != 0)
    return op->emitOpError("groups must list the world's ranks in groups of group_size (")
           << groupSize << "), not " << groups.size() << " ranks";
  std::vector<bool> seen(groups.size(), false);
  for (size_t i = 0; i < groups.size(); ++i) {
    int64_t r = groups[i];
    if (r < 0 || r >= static_cast<int64_t>(groups.size()) || seen[r])
      return op->emitOpError("groups must hold each rank 0..") << groups.size() - 1 << " once";
    seen[r] = true;
    if (i % groupSize != 0 && r <= groups[i - 1])
      return op->emitOpError("each group must list its ranks in ascending order");
  }
  return success();
}

static LogicalResult verifyReduction(Operation *op, StringRef reduction) {
  if (reduction != "sum" && reduction != "avg" && reduction != "max")
    return op->emitOpError("reduction must be \"sum\", \"avg\" or \"max\", not \"")
           << reduction << "\"";
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
  if (failed(verifyGroups(*this, getGroups(), getGroupSize())))
    return failure();
  if (getPersistent()) {
    if (getInput().getType().getElementType() != getResult().getType().getElementType())
      return emitOpError("persistent: the shard must have the gathered element type, as it is "
                         "a chunk of the gathered buffer");
    if (!isa<BlockArgument>(getInput()))
      return emitOpError("persistent: the input must be a shard argument of the step");
  }
  return verifyDim0Scaled(*this, getInput().getType(), getResult().getType(), getGroupSize());
}

LogicalResult ReduceScatterOp::verify() {
  if (failed(verifyGroups(*this, getGroups(), getGroupSize())) ||
      failed(verifyReduction(*this, getReduction())))
    return failure();
  return verifyDim0Scaled(*this, getResult().getType(), getInput().getType(), getGroupSize());
}

LogicalResult AllReduceOp::verify() {
  if (failed(verifyGroups(*this, getGroups(), getGroupSize())))
    return failure();
  return verifyReduction(*this, getReduction());
}
