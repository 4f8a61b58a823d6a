//===- LrScheduleTest.cpp - learning rate per step ------------------------===//
//
// The two schedules against their formulas step by step (warmup ramp,
// cosine decay to MIN_LR on the last step, WARMUP 0, WARMUP past the end),
// and the parser: every valid spelling, and refusals that list the forms.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/LrSchedule.h"

#include <gtest/gtest.h>

#include <cmath>

namespace fsdp::rt {
namespace {

LrSchedule parsed(const std::string &text) {
  LrSchedule s;
  Status status = LrSchedule::parse(text, s);
  EXPECT_TRUE(status.isOk()) << text << ": " << status.message();
  return s;
}

TEST(LrScheduleTest, ConstantIsTheBaseEveryStep) {
  LrSchedule s = parsed("constant");
  for (int64_t t = 1; t <= 5; ++t)
    EXPECT_EQ(s.at(3e-4, t, 5), 3e-4);
  EXPECT_EQ(LrSchedule().kind, LrSchedule::Kind::Constant);
}

TEST(LrScheduleTest, CosineFollowsTheFormula) {
  LrSchedule s = parsed("cosine:4:1e-5");
  EXPECT_EQ(s.warmup, 4);
  EXPECT_EQ(s.minLr, 1e-5);
  const double base = 1e-3, minLr = 1e-5;
  const int64_t K = 20;
  for (int64_t t = 1; t <= K; ++t) {
    double expected = t <= 4 ? base * t / 4
                             : minLr + (base - minLr) * 0.5 *
                                           (1 + std::cos(M_PI * (t - 4) / double(K - 4)));
    EXPECT_DOUBLE_EQ(s.at(base, t, K), expected) << "step " << t;
  }
  EXPECT_EQ(s.at(base, 4, K), base);                 // the ramp ends at the base
  EXPECT_EQ(s.at(base, K, K), minLr);                // and the decay at the minimum
  EXPECT_DOUBLE_EQ(s.at(base, 12, K), (base + minLr) / 2); // halfway
}

TEST(LrScheduleTest, CosineEdgeCases) {
  LrSchedule noWarmup = parsed("cosine:0");
  EXPECT_EQ(noWarmup.minLr, 0.0);
  EXPECT_DOUBLE_EQ(noWarmup.at(1.0, 1, 10), 0.5 * (1 + std::cos(M_PI / 10)));
  EXPECT_EQ(noWarmup.at(1.0, 10, 10), 0.0);
  // WARMUP at or past K: the whole run ramps up.
  LrSchedule longWarmup = parsed("cosine:10");
  EXPECT_DOUBLE_EQ(longWarmup.at(2.0, 5, 5), 1.0);
  EXPECT_DOUBLE_EQ(parsed("cosine:5").at(2.0, 5, 5), 2.0);
  // A one-step run without warmup ends at the minimum on its only step.
  EXPECT_EQ(parsed("cosine:0:0.25").at(1.0, 1, 1), 0.25);
}

TEST(LrScheduleTest, BadSpellingsListTheForms) {
  for (const char *bad : {"", "cos", "cosine", "cosine:", "cosine:x", "cosine:-1", "cosine:1.5",
                          "cosine:10:", "cosine:10:abc", "cosine:10:-1e-5", "cosine:10:1e-5:3",
                          "cosine:10:inf", "Constant", "linear", "constant:1"}) {
    LrSchedule s;
    Status status = LrSchedule::parse(bad, s);
    ASSERT_FALSE(status.isOk()) << bad;
    EXPECT_NE(status.message().find("--lr-schedule: invalid value '" + std::string(bad) + "'"),
              std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("valid forms: constant, cosine:WARMUP, cosine:WARMUP:MIN_LR"),
              std::string::npos)
        << status.message();
  }
}

} // namespace
} // namespace fsdp::rt
