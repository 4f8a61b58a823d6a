//===- ArenaAllocatorTest.cpp - offline placement of transient buffers ----===//
//
// The arena allocator decides every transient offset of a plan: buffers
// whose lifetimes overlap must never share bytes, dead buffers' bytes must
// be reused, views inside a buffer resolve with it, and the arena must not
// be larger than either placement strategy alone would make it.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ArenaAllocator.h"

#include <gtest/gtest.h>

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

} // namespace
