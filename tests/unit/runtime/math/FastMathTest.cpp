//===- FastMathTest.cpp - accuracy of the vectorizable exp and erf --------===//
//
// A dense sweep (exp, erf, tanh) against the double-precision C library, measured in units
// in the last place of the correctly rounded float, plus the edges the
// header promises: overflow to +inf, flush to zero far below, NaN in NaN
// out, erf's sign and its limit of 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/math/FastMath.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fsdp::rt;

namespace {

/// |got - exact| in ulps of the float nearest to `exact`.
double ulpError(float got, double exact) {
  float nearest = static_cast<float>(exact);
  double ulp = std::nextafter(std::fabs(nearest), std::numeric_limits<float>::infinity()) -
               std::fabs(nearest);
  return std::fabs(static_cast<double>(got) - exact) / ulp;
}

TEST(FastMath, ExpWithinTwoUlpOverItsRange) {
  double worst = 0;
  for (int i = -865000; i <= 887200; ++i) {
    float x = static_cast<float>(i) * 1e-4f;
    worst = std::max(worst, ulpError(fastExp(x), std::exp(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 2.0);
}

TEST(FastMath, ExpEdges) {
  EXPECT_EQ(fastExp(0.0f), 1.0f);
  EXPECT_EQ(fastExp(89.0f), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fastExp(std::numeric_limits<float>::infinity()), std::numeric_limits<float>::infinity());
  EXPECT_EQ(fastExp(-100.0f), 0.0f);
  EXPECT_EQ(fastExp(-std::numeric_limits<float>::infinity()), 0.0f);
  EXPECT_TRUE(std::isnan(fastExp(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_TRUE(std::isfinite(fastExp(88.7f)));
}

TEST(FastMath, ErfWithinFourUlp) {
  double worst = 0;
  for (int i = -600000; i <= 600000; ++i) {
    float x = static_cast<float>(i) * 1e-5f;
    if (x == 0.0f)
      continue;
    worst = std::max(worst, ulpError(fastErf(x), std::erf(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 4.0);
}

TEST(FastMath, ErfEdges) {
  EXPECT_EQ(fastErf(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(fastErf(-0.0f)));
  EXPECT_EQ(fastErf(10.0f), 1.0f);
  EXPECT_EQ(fastErf(-10.0f), -1.0f);
  EXPECT_EQ(fastErf(std::numeric_limits<float>::infinity()), 1.0f);
  EXPECT_TRUE(std::isnan(fastErf(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fastErf(-0.3f), -fastErf(0.3f));
}

TEST(FastMath, TanhWithinFourUlp) {
  double worst = 0;
  for (int i = -1000000; i <= 1000000; ++i) {
    float x = static_cast<float>(i) * 1e-5f;
    if (x == 0.0f)
      continue;
    worst = std::max(worst, ulpError(fastTanh(x), std::tanh(static_cast<double>(x))));
  }
  EXPECT_LE(worst, 4.0);
}

TEST(FastMath, TanhEdges) {
  EXPECT_EQ(fastTanh(0.0f), 0.0f);
  EXPECT_TRUE(std::signbit(fastTanh(-0.0f)));
  EXPECT_EQ(fastTanh(20.0f), 1.0f);
  EXPECT_EQ(fastTanh(-std::numeric_limits<float>::infinity()), -1.0f);
  EXPECT_TRUE(std::isnan(fastTanh(std::numeric_limits<float>::quiet_NaN())));
  EXPECT_EQ(fastTanh(-0.7f), -fastTanh(0.7f));
}

TEST(FastMath, DoubleUsesTheCLibrary) {
  EXPECT_EQ(expOf(0.7), std::exp(0.7));
  EXPECT_EQ(erfOf(0.7), std::erf(0.7));
  EXPECT_EQ(tanhOf(0.7), std::tanh(0.7));
}

} // namespace
