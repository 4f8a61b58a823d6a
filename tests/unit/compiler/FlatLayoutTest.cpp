//===- FlatLayoutTest.cpp - flat parameters and their shards --------------===//
//
// Offsets end to end, padding up to a multiple of the world size (3 and 5
// do not divide the sizes here), equal shards, and per-rank ranges that
// tile every parameter exactly once.
//
//===----------------------------------------------------------------------===//

#include "compiler/Analysis/FlatLayout.h"

#include <gtest/gtest.h>

using namespace fsdp;

namespace {

TEST(FlatLayout, PadsToEqualShards) {
  FlatLayout l = computeFlatLayout({6, 4, 3}, 5);
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{0, 6, 10}));
  EXPECT_EQ(l.flatNumel, 13);
  EXPECT_EQ(l.shardNumel, 3);
  EXPECT_EQ(l.paddedNumel, 15);
  FlatLayout one = computeFlatLayout({6, 4, 3}, 1);
  EXPECT_EQ(one.paddedNumel, 13);
  EXPECT_EQ(one.shardNumel, 13);
}

TEST(FlatLayout, AlignedOffsetsLeaveZeroGaps) {
  // 16 f32 elements = 64 bytes: each parameter starts on a plan-aligned byte.
  FlatLayout l = computeFlatLayout({6, 20, 3}, 3, 16);
  EXPECT_EQ(l.offsets, (std::vector<int64_t>{0, 16, 48}));
  EXPECT_EQ(l.flatNumel, 51);
  EXPECT_EQ(l.shardNumel, 17);
  EXPECT_EQ(l.paddedNumel, 51);
}

TEST(FlatLayout, RankRangesTileEveryParameter) {
  const std::vector<int64_t> numels{7, 1, 5, 11};
  for (int64_t world : {1, 2, 3, 4, 5, 8})
  for (int64_t align : {1, 4, 16}) {
    FlatLayout l = computeFlatLayout(numels, world, align);
    for (size_t p = 0; p < numels.size(); ++p) {
      int64_t covered = 0, next = 0;
      for (int64_t r = 0; r < world; ++r) {
        auto [begin, end] = l.localRange(p, numels[p], r);
        if (begin == end)
          continue;
        EXPECT_EQ(begin, next) << "world " << world << " param " << p << " rank " << r;
        covered += end - begin;
        next = end;
      }
      EXPECT_EQ(covered, numels[p]) << "world " << world << " param " << p;
    }
  }
}

} // namespace
