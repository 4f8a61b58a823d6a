//===- ArenaAllocator.cpp - offline placement of transient buffers --------===//
//
// Lifetimes are intervals of announcement events: two buffers conflict
// exactly when one is allocated before the other is released and vice
// versa, which is the relation an online allocator would see too. Buffers
// never released live to the end. Greedy by size walks the already placed
// buffers in offset order, skipping those never live together with the new
// one; the first gap that fits wins (quadratic in buffers, a few
// milliseconds for the 7,000 arena buffers of the 1B model); ties in size
// keep program order, so placement is deterministic.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ArenaAllocator.h"

#include <algorithm>
#include <cassert>
#include <limits>
#include <map>
#include <numeric>

namespace fsdp {

namespace {
constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
constexpr uint64_t kOffsetMask = (uint64_t(1) << ArenaAllocator::kTicketShift) - 1;
} // namespace

uint64_t ArenaAllocator::allocate(uint64_t bytes) {
  assert(!finalized_ && "allocate after finalize");
  bytes = align(std::max<uint64_t>(bytes, 1));
  blocks_.push_back({bytes, clock_++, kNever});
  liveBytes_ += bytes;
  peakLive_ = std::max(peakLive_, liveBytes_);
  return static_cast<uint64_t>(blocks_.size()) << kTicketShift;
}

void ArenaAllocator::release(uint64_t virtualOffset) {
  uint64_t ticket = (virtualOffset >> kTicketShift) - 1;
  if (ticket >= blocks_.size() || blocks_[ticket].end != kNever)
    return;
  blocks_[ticket].end = clock_++;
  liveBytes_ -= blocks_[ticket].size;
}

std::vector<uint64_t> ArenaAllocator::placeGreedyBySize(uint64_t &peak) const {
  std::vector<size_t> order(blocks_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return blocks_[a].size > blocks_[b].size; });
  std::vector<uint64_t> offsets(blocks_.size(), 0);
  // Placed blocks sorted by offset: the first gap below a block that
  // conflicts in time and is large enough is the lowest free offset.
  std::vector<size_t> byOffset;
  byOffset.reserve(blocks_.size());
  peak = 0;
  for (size_t i : order) {
    const Block &b = blocks_[i];
    uint64_t cursor = 0;
    for (size_t j : byOffset) {
      const Block &o = blocks_[j];
      if (!(o.start < b.end && b.start < o.end))
        continue; // never live together
      if (offsets[j] >= cursor + b.size)
        break; // every later conflicting block starts higher still
      cursor = std::max(cursor, offsets[j] + o.size);
    }
    offsets[i] = cursor;
    peak = std::max(peak, cursor + b.size);
    auto at = std::upper_bound(byOffset.begin(), byOffset.end(), cursor,
                               [&](uint64_t offset, size_t j) { return offset < offsets[j]; });
    byOffset.insert(at, i);
  }
  return offsets;
}

std::vector<uint64_t> ArenaAllocator::placeBestFit(uint64_t &peak) const {
  // Replay the announcements in order.
  std::vector<std::pair<uint64_t, size_t>> events; // (time, block), releases as ~block
  for (size_t i = 0; i < blocks_.size(); ++i) {
    events.push_back({blocks_[i].start, i});
    if (blocks_[i].end != kNever)
      events.push_back({blocks_[i].end, ~i});
  }
  std::sort(events.begin(), events.end());
  std::vector<uint64_t> offsets(blocks_.size(), 0);
  std::map<uint64_t, uint64_t> live; // offset -> size
  peak = 0;
  for (const auto &[time, id] : events) {
    if (id >= blocks_.size()) { // a release
      live.erase(offsets[~id]);
      continue;
    }
    uint64_t bytes = blocks_[id].size, best = kNever, bestGap = kNever, cursor = 0;
    for (const auto &[offset, size] : live) {
      uint64_t gap = offset - cursor;
      if (gap >= bytes && gap < bestGap) {
        best = cursor;
        bestGap = gap;
      }
      cursor = offset + size;
    }
    if (best == kNever)
      best = cursor; // no gap fits: extend above the highest live block
    live[best] = bytes;
    offsets[id] = best;
    peak = std::max(peak, best + bytes);
  }
  return offsets;
}

void ArenaAllocator::finalize() {
  if (finalized_)
    return;
  finalized_ = true;
  std::vector<uint64_t> greedy = placeGreedyBySize(greedyPeak_);
  std::vector<uint64_t> bestFit = placeBestFit(bestFitPeak_);
  bool useGreedy = greedyPeak_ <= bestFitPeak_;
  offsets_ = useGreedy ? std::move(greedy) : std::move(bestFit);
  peak_ = useGreedy ? greedyPeak_ : bestFitPeak_;
}

uint64_t ArenaAllocator::resolve(uint64_t virtualOffset) const {
  assert(finalized_ && "resolve before finalize");
  uint64_t ticket = (virtualOffset >> kTicketShift) - 1;
  return offsets_[ticket] + (virtualOffset & kOffsetMask);
}

} // namespace fsdp
