//===- ElementCountTest.cpp - checkedElementCount and its saturation -------===//
//
// The element count of shapes from hostile files: a 0 anywhere wins over
// huge dimensions before or after it, a product past int64 is reported (or
// saturated) rather than wrapped, including a product that wraps to a
// small number such as 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/ElementCount.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

using fsdp::checkedElementCount;
using fsdp::saturatedElementCount;
using Dims = std::vector<int64_t>;

constexpr int64_t kBig = int64_t(1) << 62;

TEST(ElementCountTest, ProductOfOrdinaryShapes) {
  EXPECT_EQ(checkedElementCount(Dims{}), 1);
  EXPECT_EQ(checkedElementCount(Dims{2, 3, 4}), 24);
  EXPECT_EQ(checkedElementCount(Dims{INT64_MAX}), INT64_MAX);
}

TEST(ElementCountTest, AZeroAnywhereIsZeroWhateverTheOtherDimensions) {
  EXPECT_EQ(checkedElementCount(Dims{kBig, 4, 0}), 0);
  EXPECT_EQ(checkedElementCount(Dims{0, kBig, 4}), 0);
  EXPECT_EQ(saturatedElementCount(Dims{kBig, kBig, 0, kBig}), 0);
}

TEST(ElementCountTest, OverflowIsReportedNotWrapped) {
  EXPECT_EQ(checkedElementCount(Dims{kBig, 2}), std::nullopt);
  EXPECT_EQ(checkedElementCount(Dims{INT64_MAX, 2}), std::nullopt);
  // 7 * 7905747460161236407 is 1 modulo 2^64.
  EXPECT_EQ(checkedElementCount(Dims{7, 7905747460161236407}), std::nullopt);
  EXPECT_EQ(saturatedElementCount(Dims{7, 7905747460161236407}), INT64_MAX);
  EXPECT_EQ(saturatedElementCount(Dims{kBig, 4}), INT64_MAX);
}

} // namespace
