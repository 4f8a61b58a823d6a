//===- LrScheduleTest.cpp - learning rate per step ------------------------===//
//
// The schedules against their formulas step by step (warmup ramp, cosine
// and linear decay to MIN_LR on the last step, wsd's stable part and decay,
// WARMUP 0, WARMUP past the end), the parser (every valid spelling, and
// refusals that list the forms) and the checks against the run. The rates
// against transformers' and torch's definitions: tests/e2e/test_schedules.py.
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
    // The ratio form (LrSchedule.h) and this one round alike up to an ulp
    // or two.
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

TEST(LrScheduleTest, ConstantWarmsUp) {
  LrSchedule s = parsed("constant:4");
  EXPECT_EQ(s.warmup, 4);
  for (int64_t t = 1; t <= 4; ++t)
    EXPECT_DOUBLE_EQ(s.at(2.0, t, 10), 2.0 * t / 4) << "step " << t;
  for (int64_t t = 5; t <= 10; ++t)
    EXPECT_EQ(s.at(2.0, t, 10), 2.0);
}

TEST(LrScheduleTest, LinearDecaysToTheMinimum) {
  LrSchedule s = parsed("linear:2:0.5");
  EXPECT_EQ(s.kind, LrSchedule::Kind::Linear);
  const double base = 4.0, minLr = 0.5;
  const int64_t K = 10;
  EXPECT_EQ(s.at(base, 1, K), 2.0);
  EXPECT_EQ(s.at(base, 2, K), base);
  for (int64_t t = 3; t <= K; ++t)
    EXPECT_DOUBLE_EQ(s.at(base, t, K), minLr + (base - minLr) * double(K - t) / (K - 2))
        << "step " << t;
  EXPECT_EQ(s.at(base, K, K), minLr);
  EXPECT_EQ(parsed("linear:0").at(base, K, K), 0.0);
  EXPECT_DOUBLE_EQ(parsed("linear:0").at(base, 1, K), base * 0.9);
}

TEST(LrScheduleTest, WsdWarmsHoldsAndDecays) {
  LrSchedule s = parsed("wsd:2:4:0.25");
  EXPECT_EQ(s.kind, LrSchedule::Kind::Wsd);
  EXPECT_EQ(s.warmup, 2);
  EXPECT_EQ(s.decay, 4);
  EXPECT_EQ(s.minLr, 0.25);
  const double base = 1.0;
  const int64_t K = 10; // warmup 1-2, stable 3-6, decay 7-10
  EXPECT_EQ(s.at(base, 1, K), 0.5);
  for (int64_t t = 2; t <= 6; ++t)
    EXPECT_EQ(s.at(base, t, K), base) << "step " << t;
  for (int64_t t = 7; t <= K; ++t)
    EXPECT_DOUBLE_EQ(s.at(base, t, K), 0.25 + 0.75 * (1 - (t - 6) / 4.0)) << "step " << t;
  EXPECT_EQ(s.at(base, K, K), 0.25);
  // DECAY 0: no decay at all; WARMUP + DECAY = K: no stable part.
  EXPECT_EQ(parsed("wsd:0:0").at(base, K, K), base);
  EXPECT_DOUBLE_EQ(parsed("wsd:5:5").at(base, 6, K), 0.8);
}

TEST(LrScheduleTest, ChecksAgainstTheRun) {
  EXPECT_TRUE(parsed("wsd:4:6").check("wsd:4:6", 1e-3, 10).isOk());
  Status tooLong = parsed("wsd:5:6").check("wsd:5:6", 1e-3, 10);
  ASSERT_FALSE(tooLong.isOk());
  EXPECT_EQ(tooLong.message(), "--lr-schedule=wsd:5:6: WARMUP + DECAY = 11 steps, more than the "
                               "run's 10 (--max-steps, default --steps)");
  Status above = parsed("cosine:0:0.01").check("cosine:0:0.01", 1e-3, 10);
  ASSERT_FALSE(above.isOk());
  EXPECT_NE(above.message().find("MIN_LR 0.01 is above the base learning rate 0.001"),
            std::string::npos)
      << above.message();
  EXPECT_TRUE(parsed("linear:0:1e-3").check("linear:0:1e-3", 1e-3, 10).isOk());
  // WARMUP past the end stays allowed: the whole run ramps up.
  EXPECT_TRUE(parsed("cosine:20").check("cosine:20", 1e-3, 10).isOk());
}

TEST(LrScheduleTest, BadSpellingsListTheForms) {
  for (const char *bad :
       {"", "cos", "cosine", "cosine:", "cosine:x", "cosine:-1", "cosine:1.5", "cosine:10:",
        "cosine:10:abc", "cosine:10:-1e-5", "cosine:10:1e-5:3", "cosine:10:inf", "Constant",
        "linear", "linear:", "linear:-2", "linear:2:-1", "linear:2:1:1", "constant:",
        "constant:-1", "constant:1:1e-5", "constant:x", "wsd", "wsd:10", "wsd:10:",
        "wsd:-1:5", "wsd:10:-5", "wsd:10:5:-1", "wsd:10:5:1e-5:1", "wsd:1.5:2", "wsd:+1:2"}) {
    LrSchedule s;
    Status status = LrSchedule::parse(bad, s);
    ASSERT_FALSE(status.isOk()) << bad;
    EXPECT_NE(status.message().find("--lr-schedule: invalid value '" + std::string(bad) + "'"),
              std::string::npos)
        << status.message();
    EXPECT_NE(status.message().find("valid forms: constant, constant:WARMUP, "
                                    "cosine:WARMUP[:MIN_LR], linear:WARMUP[:MIN_LR], "
                                    "wsd:WARMUP:DECAY[:MIN_LR]"),
              std::string::npos)
        << status.message();
  }
}

} // namespace
} // namespace fsdp::rt
