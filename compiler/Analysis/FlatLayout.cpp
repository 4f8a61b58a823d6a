//===- FlatLayout.cpp - a shard unit's flat parameter and its shards ------===//
//
// Padding goes at the end of the flat buffer (as torch's FlatParameter
// does), so every parameter keeps a contiguous range and a rank's shard is
// one contiguous slice.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/FlatLayout.h"

#include <algorithm>

namespace fsdp {

FlatLayout computeFlatLayout(const std::vector<int64_t> &numels, int64_t worldSize,
                             int64_t alignElements, bool alignShards) {
  FlatLayout layout;
  for (int64_t n : numels) {
    int64_t offset = (layout.flatNumel + alignElements - 1) / alignElements * alignElements;
    layout.offsets.push_back(offset);
    layout.flatNumel = offset + n;
  }
  layout.shardNumel = (layout.flatNumel + worldSize - 1) / worldSize;
  if (alignShards)
    layout.shardNumel = (layout.shardNumel + alignElements - 1) / alignElements * alignElements;
  layout.paddedNumel = layout.shardNumel * worldSize;
  return layout;
}

std::pair<int64_t, int64_t> FlatLayout::localRange(size_t p, int64_t n, int64_t rank) const {
  const int64_t shardBegin = rank * shardNumel, shardEnd = shardBegin + shardNumel;
  const int64_t begin = std::max(offsets[p], shardBegin), end = std::min(offsets[p] + n, shardEnd);
  if (begin >= end)
    return {0, 0};
  return {begin - offsets[p], end - offsets[p]};
}

} // namespace fsdp
