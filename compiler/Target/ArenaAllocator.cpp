//===- ArenaAllocator.cpp - offline placement of transient buffers --------===//
//
// Lifetimes are intervals of announcement events: two buffers conflict
// exactly when one is allocated before the other is released and vice
// versa, which is the relation an online allocator would see too. Buffers
// never released live to the end. Greedy by size puts each buffer at the
// lowest offset that no already placed buffer live together with it
// overlaps; ties in size keep program order, so placement is
// deterministic. Walking every placed buffer for that is quadratic in
// buffers; instead a segment tree over the events keeps, per node, the
// union of the bytes placed there, and a buffer's offset is raised past
// the union ranges of the O(log events) nodes its lifetime meets. Best fit
// keeps the free gaps between live buffers ordered by size.
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

namespace {

/// The bytes some set of buffers occupies, as disjoint [begin, end) ranges
/// (overlapping and touching ranges merged).
class OffsetUnion {
public:
  void add(uint64_t begin, uint64_t end) {
    // The first range ending at or after `begin` through the last one
    // starting at or before `end` merge with it.
    auto first = std::lower_bound(ranges_.begin(), ranges_.end(), begin,
                                  [](const Range &r, uint64_t v) { return r.end < v; });
    auto last = first;
    while (last != ranges_.end() && last->begin <= end) {
      begin = std::min(begin, last->begin);
      end = std::max(end, last->end);
      ++last;
    }
    if (first == last) {
      ranges_.insert(first, {begin, end});
      return;
    }
    *first = {begin, end};
    ranges_.erase(first + 1, last);
  }
  /// The end of the highest range meeting [begin, end), or 0 when none
  /// does: a span of that size starting anywhere from `begin` up to that
  /// end would meet the range.
  uint64_t blockedUntil(uint64_t begin, uint64_t end) const {
    auto it = std::lower_bound(ranges_.begin(), ranges_.end(), end,
                               [](const Range &r, uint64_t v) { return r.begin < v; });
    if (it == ranges_.begin())
      return 0;
    --it;
    return it->end > begin ? it->end : 0;
  }

private:
  struct Range {
    uint64_t begin, end;
  };
  std::vector<Range> ranges_; // by offset
};

} // namespace

std::vector<uint64_t> ArenaAllocator::placeGreedyBySize(uint64_t &peak) const {
  std::vector<size_t> order(blocks_.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return blocks_[a].size > blocks_[b].size; });
  std::vector<uint64_t> offsets(blocks_.size(), 0);
  // A segment tree over the announcement events. A placed block's bytes
  // go into `own` of the nodes that exactly cover its lifetime and into
  // `below` of those and of their ancestors; the blocks live together
  // with [start, end) are then the ones in `below` of the nodes covering
  // [start, end) and in `own` of those nodes' ancestors. Searching these
  // O(log events) unions replaces a walk over every placed block, which
  // made placement quadratic in the number of buffers.
  const uint64_t events = std::max<uint64_t>(clock_, 1);
  size_t leaves = 1;
  while (leaves < events)
    leaves <<= 1;
  std::vector<OffsetUnion> own(2 * leaves), below(2 * leaves);
  std::vector<size_t> covering, ancestors;
  // The last block whose ancestors a node was collected for: the paths
  // up from the covering nodes meet, and above a meeting point every node
  // is already collected.
  std::vector<size_t> collectedFor(2 * leaves, SIZE_MAX);
  auto decompose = [&](size_t i) {
    covering.clear();
    ancestors.clear();
    size_t lo = blocks_[i].start + leaves, hi = std::min(blocks_[i].end, events) + leaves;
    for (; lo < hi; lo >>= 1, hi >>= 1) {
      if (lo & 1)
        covering.push_back(lo++);
      if (hi & 1)
        covering.push_back(--hi);
    }
    for (size_t node : covering)
      for (size_t up = node >> 1; up && collectedFor[up] != i; up >>= 1) {
        collectedFor[up] = i;
        ancestors.push_back(up);
      }
  };
  peak = 0;
  for (size_t i : order) {
    const Block &b = blocks_[i];
    decompose(i);
    // The lowest offset no conflicting block overlaps: raise it past
    // every union range in the way until none is.
    uint64_t cursor = 0;
    for (bool moved = true; moved;) {
      moved = false;
      auto raise = [&](const OffsetUnion &u) {
        if (uint64_t top = u.blockedUntil(cursor, cursor + b.size)) {
          cursor = top;
          moved = true;
        }
      };
      for (size_t node : covering)
        raise(below[node]);
      for (size_t node : ancestors)
        raise(own[node]);
    }
    offsets[i] = cursor;
    peak = std::max(peak, cursor + b.size);
    for (size_t node : covering) {
      own[node].add(cursor, cursor + b.size);
      below[node].add(cursor, cursor + b.size);
    }
    for (size_t node : ancestors)
      below[node].add(cursor, cursor + b.size);
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
