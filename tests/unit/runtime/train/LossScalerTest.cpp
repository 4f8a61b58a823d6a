//===- LossScalerTest.cpp - torch.amp.GradScaler's scale update -----------===//
//
// The scale starts at 65536 and halves after every skipped step; good steps
// count up to the growth interval, which doubles it and restarts the count
// (a skip restarts it too); the grown scale stays finite; the optimizer's
// step count advances on good steps only; the reciprocal is 1/scale in f64
// rounded to f32. The sequences are what torch's _amp_update_scale_ gives.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/LossScaler.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fsdp::rt {
namespace {

TEST(LossScalerTest, StartsAsGradScaler) {
  LossScaler scaler;
  EXPECT_EQ(scaler.state().scale, 65536.0f);
  EXPECT_EQ(scaler.state().growthTracker, 0);
  EXPECT_EQ(scaler.nextOptimizerStep(), 1);
  EXPECT_EQ(scaler.growthInterval(), 2000);
  EXPECT_EQ(scaler.invScale(), 1.0f / 65536.0f);
}

TEST(LossScalerTest, BackoffAndGrowth) {
  LossScaler scaler(3);
  scaler.update(true); // skipped: halve, no optimizer step
  EXPECT_EQ(scaler.state().scale, 32768.0f);
  EXPECT_EQ(scaler.nextOptimizerStep(), 1);
  scaler.update(false);
  scaler.update(false);
  EXPECT_EQ(scaler.state().growthTracker, 2);
  EXPECT_EQ(scaler.state().scale, 32768.0f);
  scaler.update(false); // the third good step in a row doubles
  EXPECT_EQ(scaler.state().scale, 65536.0f);
  EXPECT_EQ(scaler.state().growthTracker, 0);
  EXPECT_EQ(scaler.nextOptimizerStep(), 4);
  scaler.update(false);
  scaler.update(true); // a skip restarts the run of good steps
  EXPECT_EQ(scaler.state().scale, 32768.0f);
  EXPECT_EQ(scaler.state().growthTracker, 0);
  EXPECT_EQ(scaler.nextOptimizerStep(), 5);
}

TEST(LossScalerTest, DefaultIntervalGrowsAfter2000GoodSteps) {
  LossScaler scaler;
  for (int i = 0; i < 1999; ++i)
    scaler.update(false);
  EXPECT_EQ(scaler.state().scale, 65536.0f);
  scaler.update(false);
  EXPECT_EQ(scaler.state().scale, 131072.0f);
  EXPECT_EQ(scaler.nextOptimizerStep(), 2001);
}

TEST(LossScalerTest, GrowthStaysFinite) {
  LossScaler scaler(1);
  LossScalerState big;
  big.scale = std::numeric_limits<float>::max();
  scaler.setState(big);
  scaler.update(false);
  EXPECT_EQ(scaler.state().scale, std::numeric_limits<float>::max());
  EXPECT_EQ(scaler.state().growthTracker, 0);
}

TEST(LossScalerTest, InverseIsTheF64ReciprocalRounded) {
  LossScaler scaler;
  LossScalerState odd;
  odd.scale = 3.0f; // not a power of two: rounding shows
  scaler.setState(odd);
  EXPECT_EQ(scaler.invScale(), static_cast<float>(1.0 / 3.0));
  for (int i = 0; i < 30; ++i)
    scaler.update(true);
  EXPECT_GT(scaler.state().scale, 0.0f);
  EXPECT_TRUE(std::isfinite(scaler.invScale()));
}

} // namespace
} // namespace fsdp::rt
