//===- ArenaAllocator.cpp - best-fit placement of transient buffers -------===//
//
// Live blocks are kept sorted by offset; the gaps between them (and the
// space above the highest one) are the candidates. Ties go to the lowest
// offset, which keeps placement deterministic.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ArenaAllocator.h"

#include <algorithm>
#include <limits>

namespace fsdp {

uint64_t ArenaAllocator::allocate(uint64_t bytes) {
  bytes = align(std::max<uint64_t>(bytes, 1));
  uint64_t best = std::numeric_limits<uint64_t>::max(), bestGap = best;
  uint64_t cursor = 0;
  for (const auto &[offset, size] : live_) {
    uint64_t gap = offset - cursor;
    if (gap >= bytes && gap < bestGap) {
      best = cursor;
      bestGap = gap;
    }
    cursor = offset + size;
  }
  if (best == std::numeric_limits<uint64_t>::max())
    best = cursor; // no gap fits: extend above the highest live block
  live_[best] = bytes;
  peak_ = std::max(peak_, best + bytes);
  liveBytes_ += bytes;
  peakLive_ = std::max(peakLive_, liveBytes_);
  return best;
}

void ArenaAllocator::release(uint64_t offset) {
  auto it = live_.find(offset);
  if (it == live_.end())
    return;
  liveBytes_ -= it->second;
  live_.erase(it);
}

} // namespace fsdp
