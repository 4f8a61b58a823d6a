//===- ArenaAllocatorTest.cpp - offline placement of transient buffers ----===//
//
// The arena allocator decides every transient offset of a plan: buffers
// whose lifetimes overlap must never share bytes, dead buffers' bytes must
// be reused, views inside a buffer resolve with it, and the arena must not
// be larger than either placement strategy alone would make it. Both
// strategies index their state to stay fast on long steps; the plain
// quadratic forms of the same rules below are the reference they must
// match exactly.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ArenaAllocator.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>
#include <vector>

namespace {

using fsdp::ArenaAllocator;

TEST(ArenaAllocator, ReusesDeadBytesAndResolvesViews) {
  ArenaAllocator arena;
  uint64_t a = arena.allocate(100), b = arena.allocate(64);
  arena.release(a);
  uint64_t c = arena.allocate(128); // a is dead: c may take its bytes
  arena.release(b);
  arena.release(c);
  arena.finalize();
  EXPECT_EQ(arena.peak(), 192u);
  EXPECT_EQ(arena.peakLive(), 192u);
  EXPECT_EQ(arena.resolve(a) % 64, 0u);
  EXPECT_NE(arena.resolve(a), arena.resolve(b));
  EXPECT_NE(arena.resolve(c), arena.resolve(b));
  EXPECT_EQ(arena.resolve(b + 12), arena.resolve(b) + 12); // a view 12 bytes in
}

// Best fit in program order loses here (the small early buffer pins the
// bottom); greedy by size places the big buffers first and needs only the
// lower bound.
TEST(ArenaAllocator, GreedyBySizeBeatsOnlineBestFit) {
  ArenaAllocator arena;
  uint64_t small = arena.allocate(64);
  uint64_t big1 = arena.allocate(1024);
  arena.release(small);
  uint64_t big2 = arena.allocate(1024 + 64);
  arena.release(big1);
  arena.release(big2);
  arena.finalize();
  EXPECT_EQ(arena.peakLive(), 1024u + 1024 + 64);
  EXPECT_EQ(arena.greedyBySizePeak(), arena.peakLive());
  EXPECT_LE(arena.peak(), arena.bestFitPeak());
  EXPECT_EQ(arena.peak(), arena.peakLive());
}

TEST(ArenaAllocator, OverlappingLifetimesNeverShareBytes) {
  std::mt19937 rng(7);
  ArenaAllocator arena;
  struct Life {
    uint64_t virt, size, start, end;
  };
  std::vector<Life> lives;
  std::vector<size_t> live;
  uint64_t clock = 0;
  for (int step = 0; step < 3000; ++step) {
    if (!live.empty() && rng() % 2) {
      size_t k = rng() % live.size();
      arena.release(lives[live[k]].virt);
      lives[live[k]].end = clock++;
      live.erase(live.begin() + k);
      continue;
    }
    uint64_t size = 1 + rng() % 5000;
    lives.push_back({arena.allocate(size), ArenaAllocator::align(size), clock++, UINT64_MAX});
    live.push_back(lives.size() - 1);
  }
  arena.finalize();
  EXPECT_GE(arena.peak(), arena.peakLive());
  EXPECT_EQ(arena.peak(), std::min(arena.greedyBySizePeak(), arena.bestFitPeak()));
  for (size_t i = 0; i < lives.size(); ++i) {
    uint64_t lo = arena.resolve(lives[i].virt);
    ASSERT_EQ(lo % 64, 0u);
    ASSERT_LE(lo + lives[i].size, arena.peak());
    for (size_t j = i + 1; j < lives.size(); ++j) {
      bool together = lives[i].start < lives[j].end && lives[j].start < lives[i].end;
      if (!together)
        continue;
      uint64_t lo2 = arena.resolve(lives[j].virt);
      ASSERT_TRUE(lo + lives[i].size <= lo2 || lo2 + lives[j].size <= lo)
          << "buffers " << i << " and " << j << " overlap while both live";
    }
  }
}

/// A buffer's size (aligned) and lifetime [start, end) in announcement
/// events, as the allocator sees them.
struct Lifetime {
  uint64_t size, start, end;
};

bool together(const Lifetime &a, const Lifetime &b) { return a.start < b.end && b.start < a.end; }

/// Greedy by size, literally: largest first (program order among equal
/// sizes), each at the lowest offset free of every buffer placed so far
/// that it is live with.
uint64_t referenceGreedyPeak(const std::vector<Lifetime> &lives) {
  std::vector<size_t> order(lives.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return lives[a].size > lives[b].size; });
  std::vector<uint64_t> offset(lives.size());
  std::vector<size_t> placed;
  uint64_t peak = 0;
  for (size_t i : order) {
    // Candidates: 0 and the top of every conflicting buffer.
    std::vector<uint64_t> candidates{0};
    for (size_t j : placed)
      if (together(lives[i], lives[j]))
        candidates.push_back(offset[j] + lives[j].size);
    std::sort(candidates.begin(), candidates.end());
    for (uint64_t x : candidates) {
      bool fits = std::none_of(placed.begin(), placed.end(), [&](size_t j) {
        return together(lives[i], lives[j]) && x < offset[j] + lives[j].size &&
               offset[j] < x + lives[i].size;
      });
      if (fits) {
        offset[i] = x;
        break;
      }
    }
    placed.push_back(i);
    peak = std::max(peak, offset[i] + lives[i].size);
  }
  return peak;
}

/// Best fit in program order, literally: at each allocation, the smallest
/// gap between live buffers that fits (the lowest of equal ones), else on
/// top of the highest live buffer.
uint64_t referenceBestFitPeak(const std::vector<Lifetime> &lives, uint64_t clock) {
  std::map<uint64_t, uint64_t> live; // offset -> size
  std::vector<uint64_t> offset(lives.size());
  uint64_t peak = 0;
  for (uint64_t t = 0; t < clock; ++t)
    for (size_t i = 0; i < lives.size(); ++i) {
      if (lives[i].end == t)
        live.erase(offset[i]);
      if (lives[i].start != t)
        continue;
      uint64_t cursor = 0, best = UINT64_MAX, bestGap = UINT64_MAX;
      for (const auto &[o, size] : live) {
        if (o - cursor >= lives[i].size && o - cursor < bestGap) {
          best = cursor;
          bestGap = o - cursor;
        }
        cursor = o + size;
      }
      offset[i] = best == UINT64_MAX ? cursor : best;
      live[offset[i]] = lives[i].size;
      peak = std::max(peak, offset[i] + lives[i].size);
    }
  return peak;
}

// Random steps with few distinct sizes (ties in size and in gap size), long
// and short lifetimes, and buffers never released: each strategy's arena
// is exactly what its reference gives.
TEST(ArenaAllocator, StrategiesMatchTheirReferences) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 40; ++trial) {
    ArenaAllocator arena;
    std::vector<Lifetime> lives;
    std::vector<uint64_t> virt;
    std::vector<size_t> live;
    uint64_t clock = 0;
    const int steps = 50 + trial * 10;
    for (int step = 0; step < steps; ++step) {
      if (!live.empty() && rng() % 5 < 2) {
        // Mostly the newest (temporaries), sometimes an old one (saved
        // activations); a few stay live to the end.
        size_t k = rng() % 3 ? live.size() - 1 : rng() % live.size();
        if (rng() % 8) {
          arena.release(virt[live[k]]);
          lives[live[k]].end = clock++;
        }
        live.erase(live.begin() + k);
        continue;
      }
      uint64_t size = 64 * (1 + rng() % 6) * (rng() % 4 ? 1 : 16);
      virt.push_back(arena.allocate(size));
      lives.push_back({ArenaAllocator::align(size), clock++, UINT64_MAX});
      live.push_back(lives.size() - 1);
    }
    arena.finalize();
    EXPECT_EQ(arena.greedyBySizePeak(), referenceGreedyPeak(lives)) << "trial " << trial;
    EXPECT_EQ(arena.bestFitPeak(), referenceBestFitPeak(lives, clock)) << "trial " << trial;
  }
}

} // namespace
