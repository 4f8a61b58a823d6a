//===- FusedLowPrecisionTest.cpp - bf16/f16 Fused programs vs unfused ops -===//
//
// A bf16 or f16 Fused program must store exactly what its ops store run one
// unfused kernel at a time: each op computes in f32 and rounds its result
// to the storage dtype, intermediates included. Every op code in a chain of
// three (so an intermediate's rounding shows), over all 65536 bit patterns
// of the dtype as one operand (NaN payloads, infinities, subnormals, zeros)
// and random values as the other, with broadcast scalars and two results;
// the GELU chain of a training step; and programs mixing dtypes refused.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/math/FusedOps.h"

#include <gtest/gtest.h>

#include <array>
#include <random>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::runFused;
using kerneltest::TestTensor;

constexpr int64_t kPatterns = 65536;

/// Every 16-bit pattern once, in order.
TestTensor allPatterns(DType dtype) {
  TestTensor t(dtype, {kPatterns});
  for (int64_t i = 0; i < kPatterns; ++i)
    t.setBits(i, static_cast<uint64_t>(i));
  return t;
}

/// Random finite values of `dtype` in [lo, hi), plus a few specials.
TestTensor randomValues(DType dtype, int64_t n, uint32_t seed, double lo, double hi) {
  TestTensor t(dtype, {n});
  t.fillUniform(seed, lo, hi);
  return t;
}

/// The unfused kernel of Fused op `code` on (x, y), y ignored by unary ops.
Status unfused(int64_t code, const TestTensor &x, const TestTensor &y, const TestTensor &out) {
  static const BinaryKind binaries[] = {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                                        BinaryKind::Div};
  static const UnaryKind unaries[] = {UnaryKind::Neg,  UnaryKind::Relu, UnaryKind::Exp,
                                      UnaryKind::Log,  UnaryKind::Sqrt, UnaryKind::Erf,
                                      UnaryKind::Tanh, UnaryKind::Sigmoid};
  static const ActivationGradKind grads[] = {ActivationGradKind::Relu, ActivationGradKind::Erf,
                                             ActivationGradKind::Tanh,
                                             ActivationGradKind::Sigmoid};
  if (code < FusedNeg)
    return binary(binaries[code], x.ref(), y.ref(), out.ref());
  if (code <= FusedSigmoid)
    return unary(unaries[code - FusedNeg], x.ref(), out.ref());
  return activationGrad(grads[code - FusedReluGrad], x.ref(), y.ref(), out.ref());
}

void expectSameBits(const TestTensor &got, const TestTensor &expected, const std::string &what) {
  ASSERT_EQ(got.size(), expected.size());
  for (int64_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got.getBits(i), expected.getBits(i))
        << what << " element " << i << " (pattern 0x" << std::hex << i << ")";
}

class FusedLowPrecision : public ::testing::TestWithParam<DType> {};

TEST_P(FusedLowPrecision, EveryOpInAChainMatchesTheUnfusedKernels) {
  const DType dt = GetParam();
  const TestTensor x = allPatterns(dt);
  const TestTensor y = randomValues(dt, kPatterns, 7, -3.0, 3.0);
  TestTensor scale(dt, {});
  scale.set(0, 0.3);
  for (int64_t op = 0; op < NumFusedOps; ++op) {
    SCOPED_TRACE("op " + std::to_string(op));
    const bool unary = isUnaryFusedOp(op);
    // s0 = op(x, y); s1 = s0 * scale; s2 = op(s1, y). Values: 0 x, 1 y,
    // 2 scale, then 3 s0, 4 s1, 5 s2. Results: s2 and s0.
    TestTensor s0(dt, {kPatterns}), s1(dt, {kPatterns}), s2(dt, {kPatterns});
    ASSERT_TRUE(unfused(op, x, y, s0).isOk());
    ASSERT_TRUE(binary(BinaryKind::Mul, s0.ref(), scale.ref(), s1.ref()).isOk());
    ASSERT_TRUE(unfused(op, s1, y, s2).isOk());
    std::vector<TestTensor> got{TestTensor(dt, {kPatterns}), TestTensor(dt, {kPatterns})};
    const int64_t b = unary ? -1 : 1;
    Status s = runFused({&x, &y, &scale}, {{op, 0, b}, {FusedMul, 3, 2}, {op, 4, b}}, {5, 3}, got);
    ASSERT_TRUE(s.isOk()) << s.message();
    expectSameBits(got[0], s2, "chain end");
    expectSameBits(got[1], s0, "first op");
  }
}

TEST_P(FusedLowPrecision, RoundingAnIntermediateIsWhatMakesItExact) {
  // The test above can fail: computing (x + y) * y in f32 without
  // rounding x + y gives other bits on many elements.
  const DType dt = GetParam();
  const TestTensor x = randomValues(dt, 4096, 11, -3.0, 3.0);
  const TestTensor y = randomValues(dt, 4096, 12, -3.0, 3.0);
  std::vector<TestTensor> got{TestTensor(dt, {4096})};
  ASSERT_TRUE(runFused({&x, &y}, {{FusedAdd, 0, 1}, {FusedMul, 2, 1}}, {3}, got).isOk());
  int differs = 0;
  for (int64_t i = 0; i < 4096; ++i) {
    const float wide = (static_cast<float>(x.get(i)) + static_cast<float>(y.get(i))) *
                       static_cast<float>(y.get(i));
    TestTensor once(dt, {1});
    once.set(0, wide);
    differs += once.getBits(0) != got[0].getBits(i);
  }
  EXPECT_GT(differs, 100);
}

TEST_P(FusedLowPrecision, GeluForwardAndBackwardMatchTheUnfusedOps) {
  const DType dt = GetParam();
  const int64_t n = 1300; // two blocks and a partial one
  const TestTensor x = randomValues(dt, n, 3, -4.0, 4.0);
  const TestTensor g = randomValues(dt, n, 4, -1.0, 1.0);
  TestTensor sqrt2(dt, {}), one(dt, {}), half(dt, {});
  sqrt2.set(0, 1.4142135381698608);
  one.set(0, 1.0);
  half.set(0, 0.5);
  TestTensor scaled(dt, {n}), erfed(dt, {n}), plus1(dt, {n}), prod(dt, {n}), y(dt, {n});
  ASSERT_TRUE(binary(BinaryKind::Div, x.ref(), sqrt2.ref(), scaled.ref()).isOk());
  ASSERT_TRUE(unary(UnaryKind::Erf, scaled.ref(), erfed.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Add, erfed.ref(), one.ref(), plus1.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Mul, x.ref(), plus1.ref(), prod.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Mul, prod.ref(), half.ref(), y.ref()).isOk());
  std::vector<TestTensor> got{TestTensor(dt, {n}), TestTensor(dt, {n})};
  ASSERT_TRUE(runFused({&x, &sqrt2, &one, &half},
                       {{3, 0, 1}, {9, 4, -1}, {0, 5, 2}, {2, 0, 6}, {2, 7, 3}}, {8, 6}, got)
                  .isOk());
  expectSameBits(got[0], y, "gelu");
  expectSameBits(got[1], plus1, "saved erf + 1");

  TestTensor gh(dt, {n}), ghx(dt, {n}), de(dt, {n}), dx(dt, {n});
  ASSERT_TRUE(binary(BinaryKind::Mul, g.ref(), half.ref(), gh.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Mul, gh.ref(), x.ref(), ghx.ref()).isOk());
  ASSERT_TRUE(activationGrad(ActivationGradKind::Erf, scaled.ref(), ghx.ref(), de.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Div, de.ref(), sqrt2.ref(), dx.ref()).isOk());
  std::vector<TestTensor> back{TestTensor(dt, {n})};
  ASSERT_TRUE(runFused({&g, &half, &x, &scaled, &sqrt2},
                       {{2, 0, 1}, {2, 5, 2}, {13, 3, 6}, {3, 7, 4}}, {8}, back)
                  .isOk());
  expectSameBits(back[0], dx, "gelu gradient");
}

TEST_P(FusedLowPrecision, MixedDTypesAreRefusedWithoutWriting) {
  const DType dt = GetParam();
  const TestTensor x = randomValues(dt, 64, 5, -1.0, 1.0);
  const TestTensor wide = randomValues(DType::F32, 64, 6, -1.0, 1.0);
  TestTensor scalarF32(DType::F32, {});
  scalarF32.set(0, 2.0);
  std::vector<TestTensor> out{TestTensor(dt, {64})};
  Status s = runFused({&x, &scalarF32}, {{FusedMul, 0, 1}}, {2}, out);
  EXPECT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("input 1 must be"), std::string::npos) << s.message();
  EXPECT_FALSE(runFused({&x, &wide}, {{FusedAdd, 0, 1}}, {2}, out).isOk());
  std::vector<TestTensor> wideOut{TestTensor(DType::F32, {64})};
  EXPECT_FALSE(runFused({&x, &x}, {{FusedAdd, 0, 1}}, {2}, wideOut).isOk());
  std::vector<TestTensor> twoKinds{TestTensor(dt, {64}), TestTensor(DType::F32, {64})};
  EXPECT_FALSE(runFused({&x}, {{FusedNeg, 0, -1}, {FusedExp, 1, -1}}, {1, 2}, twoKinds).isOk());
  for (int64_t i = 0; i < 64; ++i)
    ASSERT_EQ(out[0].getBits(i), 0u);
}

INSTANTIATE_TEST_SUITE_P(Dtypes, FusedLowPrecision, ::testing::Values(DType::BF16, DType::F16),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

TEST(FusedDTypes, OtherDTypesAreRefusedByName) {
  TestTensor x(DType::F64, {8});
  std::vector<TestTensor> out{TestTensor(DType::F64, {8})};
  Status s = runFused({&x}, {{FusedNeg, 0, -1}}, {1}, out);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("f32, bf16 or f16, not f64"), std::string::npos) << s.message();
}

} // namespace
