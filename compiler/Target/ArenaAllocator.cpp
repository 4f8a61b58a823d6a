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
#include <set>

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
  // conflicts in time and is large enough is the lowest free offset. The
  // scan is the allocator's inner loop, so each entry holds what it
  // compares, contiguously.
  struct Placed {
    uint64_t offset, top, start, end;
  };
  std::vector<Placed> byOffset;
  byOffset.reserve(blocks_.size());
  peak = 0;
  for (size_t i : order) {
    const Block &b = blocks_[i];
    uint64_t cursor = 0;
    for (const Placed &o : byOffset) {
      if (!(o.start < b.end && b.start < o.end))
        continue; // never live together
      if (o.offset >= cursor + b.size)
        break; // every later conflicting block starts higher still
      cursor = std::max(cursor, o.top);
    }
    offsets[i] = cursor;
    peak = std::max(peak, cursor + b.size);
    auto at = std::upper_bound(byOffset.begin(), byOffset.end(), cursor,
                               [](uint64_t offset, const Placed &o) { return offset < o.offset; });
    byOffset.insert(at, {cursor, cursor + b.size, b.start, b.end});
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
  // The free bytes between consecutive live blocks (and below the lowest)
  // as (size, offset): the first one of at least the requested size is
  // the smallest gap that fits, the lowest of equal ones, found without
  // walking every live block.
  std::set<std::pair<uint64_t, uint64_t>> gaps;
  auto addGap = [&](uint64_t from, uint64_t to) {
    if (to > from)
      gaps.insert({to - from, from});
  };
  auto removeGap = [&](uint64_t from, uint64_t to) {
    if (to > from)
      gaps.erase({to - from, from});
  };
  // The end of the live block before `it` (0 below the lowest).
  auto endBefore = [&](std::map<uint64_t, uint64_t>::iterator it) {
    return it == live.begin() ? 0 : std::prev(it)->first + std::prev(it)->second;
  };
  peak = 0;
  for (const auto &[time, id] : events) {
    if (id >= blocks_.size()) { // a release: its gaps below and above merge
      auto it = live.find(offsets[~id]);
      uint64_t below = endBefore(it), top = it->first + it->second;
      removeGap(below, it->first);
      if (auto next = std::next(it); next != live.end()) {
        removeGap(top, next->first);
        addGap(below, next->first);
      }
      live.erase(it);
      continue;
    }
    uint64_t bytes = blocks_[id].size;
    auto fit = gaps.lower_bound({bytes, 0});
    // No gap fits: extend above the highest live block.
    uint64_t best = fit != gaps.end() ? fit->second : live.empty() ? 0 : endBefore(live.end());
    auto next = live.lower_bound(best);
    if (next != live.end()) { // it splits the gap it goes into
      uint64_t below = endBefore(next);
      removeGap(below, next->first);
      addGap(below, best);
      addGap(best + bytes, next->first);
    }
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
