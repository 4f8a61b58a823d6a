//===- ArenaAllocatorTest.cpp - best-fit placement of transient buffers ---===//
//
// The arena allocator decides every transient offset of a plan: freed
// blocks must be reused (smallest fitting gap first), live blocks must
// never overlap, and the reported peak and live lower bound must be exact.
//
//===----------------------------------------------------------------------===//

#include "compiler/Target/ArenaAllocator.h"

#include <gtest/gtest.h>

#include <map>
#include <random>

namespace {

using fsdp::ArenaAllocator;

TEST(ArenaAllocator, ReusesTheSmallestFittingGap) {
  ArenaAllocator arena;
  uint64_t a = arena.allocate(100), b = arena.allocate(64), c = arena.allocate(300),
           d = arena.allocate(64);
  EXPECT_EQ(a, 0u);
  EXPECT_EQ(b, 128u); // 100 rounds up to 128
  EXPECT_EQ(c, 192u);
  EXPECT_EQ(d, 512u);
  arena.release(a); // gap [0, 128)
  arena.release(c); // gap [192, 512)
  EXPECT_EQ(arena.allocate(60), 0u);    // fits both; the smaller gap wins
  EXPECT_EQ(arena.allocate(200), 192u); // only the larger gap fits
  EXPECT_EQ(arena.peak(), 576u);
  EXPECT_EQ(arena.peakLive(), 128u + 64 + 320 + 64);
}

TEST(ArenaAllocator, LiveBlocksNeverOverlap) {
  std::mt19937 rng(7);
  ArenaAllocator arena;
  std::map<uint64_t, uint64_t> live; // offset -> aligned size
  for (int step = 0; step < 2000; ++step) {
    if (!live.empty() && rng() % 2) {
      auto it = std::next(live.begin(), rng() % live.size());
      arena.release(it->first);
      live.erase(it);
      continue;
    }
    uint64_t size = 1 + rng() % 5000;
    uint64_t offset = arena.allocate(size);
    ASSERT_EQ(offset % 64, 0u);
    uint64_t aligned = ArenaAllocator::align(size);
    auto next = live.lower_bound(offset);
    if (next != live.end())
      ASSERT_LE(offset + aligned, next->first);
    if (next != live.begin())
      ASSERT_LE(std::prev(next)->first + std::prev(next)->second, offset);
    live[offset] = aligned;
    ASSERT_LE(offset + aligned, arena.peak());
  }
  EXPECT_GE(arena.peak(), arena.peakLive());
}

} // namespace
