//===- ByteSizeTest.cpp - tests of the shared byte-count formatting -------===//
//
// runtime/support/ByteSize.h is the one formatter of byte counts: the step
// log's one decimal, the memory report's two, and the budget errors' exact
// count after the rounded size. These pin the texts the tools print.
//
//===----------------------------------------------------------------------===//

#include "runtime/support/ByteSize.h"

#include <gtest/gtest.h>

namespace fsdp {
namespace {

TEST(ByteSizeTest, StepLogUsesOneDecimal) {
  EXPECT_EQ(formatBytes(0), "0 B");
  EXPECT_EQ(formatBytes(1023), "1023 B");
  EXPECT_EQ(formatBytes(1536), "1.5 KiB");
  EXPECT_EQ(formatBytes(uint64_t{80} << 30), "80.0 GiB");
}

TEST(ByteSizeTest, ReportUsesTwoDecimalsAndStopsAtTiB) {
  EXPECT_EQ(formatBytes(17, 2), "17 B");
  EXPECT_EQ(formatBytes(1536, 2), "1.50 KiB");
  EXPECT_EQ(formatBytes(uint64_t{3} << 50, 2), "3072.00 TiB");
}

TEST(ByteSizeTest, WithCountAddsTheExactBytesOnceRounded) {
  EXPECT_EQ(formatBytesWithCount(1000), "1000 B");
  EXPECT_EQ(formatBytesWithCount(uint64_t{3} << 29), "1.50 GiB (1610612736 B)");
}

} // namespace
} // namespace fsdp
