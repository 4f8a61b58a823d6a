//===- FusedKernelsTest.cpp - the fused elementwise kernel ----------------===//
//
// Fusion must change no bit: every op, alone and in the GELU chains a
// training step fuses (forward and backward), against the same ops run one
// kernel at a time, bit for bit, over sizes that end mid-block and with
// scalar operands; and a malformed program is refused without writing.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <random>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::runFused;
using kerneltest::TestTensor;

constexpr int64_t kN = 1300; // two full blocks of 512 and a partial one

TestTensor randomTensor(kerneltest::Dims dims, uint32_t seed, double lo, double hi) {
  TestTensor t(DType::F32, std::move(dims));
  t.fillUniform(seed, lo, hi);
  return t;
}

void expectSameBits(const TestTensor &got, const TestTensor &expected, const char *what) {
  ASSERT_EQ(got.size(), expected.size());
  for (int64_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(got.getBits(i), expected.getBits(i)) << what << " element " << i;
}

TEST(FusedKernels, EveryOpMatchesItsKernelBitForBit) {
  TestTensor x = randomTensor({kN}, 1, 0.1, 3.0), y = randomTensor({kN}, 2, -2.0, 2.0);
  const BinaryKind binaries[] = {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div};
  for (int op = 0; op < 4; ++op) {
    TestTensor expected(DType::F32, {kN});
    std::vector<TestTensor> got{TestTensor(DType::F32, {kN})};
    ASSERT_TRUE(binary(binaries[op], y.ref(), x.ref(), expected.ref()).isOk());
    ASSERT_TRUE(runFused({&y, &x}, {{op, 0, 1}}, {2}, got).isOk());
    expectSameBits(got[0], expected, "binary");
  }
  const UnaryKind unaries[] = {UnaryKind::Neg, UnaryKind::Relu, UnaryKind::Exp, UnaryKind::Log,
                               UnaryKind::Sqrt, UnaryKind::Erf, UnaryKind::Tanh,
                               UnaryKind::Sigmoid};
  for (int op = 4; op < 12; ++op) {
    const TestTensor &in = op == 7 || op == 8 ? x : y; // log and sqrt need positive inputs
    TestTensor expected(DType::F32, {kN});
    std::vector<TestTensor> got{TestTensor(DType::F32, {kN})};
    ASSERT_TRUE(unary(unaries[op - 4], in.ref(), expected.ref()).isOk());
    ASSERT_TRUE(runFused({&in}, {{op, 0, -1}}, {1}, got).isOk());
    expectSameBits(got[0], expected, "unary");
  }
  const ActivationGradKind grads[] = {ActivationGradKind::Relu, ActivationGradKind::Erf,
                                      ActivationGradKind::Tanh, ActivationGradKind::Sigmoid};
  for (int op = 12; op < 16; ++op) {
    TestTensor expected(DType::F32, {kN});
    std::vector<TestTensor> got{TestTensor(DType::F32, {kN})};
    ASSERT_TRUE(activationGrad(grads[op - 12], y.ref(), x.ref(), expected.ref()).isOk());
    ASSERT_TRUE(runFused({&y, &x}, {{op, 0, 1}}, {2}, got).isOk());
    expectSameBits(got[0], expected, "activation gradient");
  }
}

TEST(FusedKernels, GeluChainsMatchTheUnfusedOps) {
  // Forward: y = (x * (erf(x / sqrt2) + 1)) * 0.5, also returning the
  // saved (erf + 1) as a second result.
  TestTensor x = randomTensor({2, kN}, 3, -4.0, 4.0), g = randomTensor({2, kN}, 4, -1.0, 1.0);
  TestTensor sqrt2(DType::F32, {}), one(DType::F32, {}), half(DType::F32, {});
  sqrt2.set(0, 1.4142135381698608);
  one.set(0, 1.0);
  half.set(0, 0.5);
  TestTensor scaled(DType::F32, {2, kN}), erfed(DType::F32, {2, kN}), plus1(DType::F32, {2, kN});
  TestTensor prod(DType::F32, {2, kN}), y(DType::F32, {2, kN});
  ASSERT_TRUE(binary(BinaryKind::Div, x.ref(), sqrt2.ref(), scaled.ref()).isOk());
  ASSERT_TRUE(unary(UnaryKind::Erf, scaled.ref(), erfed.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Add, erfed.ref(), one.ref(), plus1.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Mul, x.ref(), plus1.ref(), prod.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Mul, prod.ref(), half.ref(), y.ref()).isOk());
  std::vector<TestTensor> got{TestTensor(DType::F32, {2, kN}), TestTensor(DType::F32, {2, kN})};
  // Values: 0 x, 1 sqrt2, 2 one, 3 half, then ops 4..8.
  ASSERT_TRUE(runFused({&x, &sqrt2, &one, &half},
                       {{3, 0, 1}, {9, 4, -1}, {0, 5, 2}, {2, 0, 6}, {2, 7, 3}}, {8, 6}, got)
                  .isOk());
  expectSameBits(got[0], y, "gelu");
  expectSameBits(got[1], plus1, "saved erf + 1");

  // Backward through the erf: dx = erf_grad(x / sqrt2, g * 0.5 * x) / sqrt2.
  TestTensor gh(DType::F32, {2, kN}), ghx(DType::F32, {2, kN}), de(DType::F32, {2, kN});
  TestTensor dx(DType::F32, {2, kN});
  ASSERT_TRUE(binary(BinaryKind::Mul, g.ref(), half.ref(), gh.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Mul, gh.ref(), x.ref(), ghx.ref()).isOk());
  ASSERT_TRUE(activationGrad(ActivationGradKind::Erf, scaled.ref(), ghx.ref(), de.ref()).isOk());
  ASSERT_TRUE(binary(BinaryKind::Div, de.ref(), sqrt2.ref(), dx.ref()).isOk());
  std::vector<TestTensor> back{TestTensor(DType::F32, {2, kN})};
  // Values: 0 g, 1 half, 2 x, 3 scaled, 4 sqrt2, then ops 5..8.
  ASSERT_TRUE(runFused({&g, &half, &x, &scaled, &sqrt2},
                       {{2, 0, 1}, {2, 5, 2}, {13, 3, 6}, {3, 7, 4}}, {8}, back)
                  .isOk());
  expectSameBits(back[0], dx, "gelu gradient");
}

TEST(FusedKernels, MalformedProgramsAreRefused) {
  TestTensor x = randomTensor({kN}, 5, -1.0, 1.0);
  TestTensor small = randomTensor({3}, 6, -1.0, 1.0);
  std::vector<TestTensor> out{TestTensor(DType::F32, {kN})};
  EXPECT_FALSE(runFused({&x}, {{0, 0, 1}}, {1}, out).isOk());   // reads itself
  EXPECT_FALSE(runFused({&x}, {{99, 0, 0}}, {1}, out).isOk());  // unknown op
  EXPECT_FALSE(runFused({&x}, {{6, 0, 0}}, {1}, out).isOk());   // unary with a b
  EXPECT_FALSE(runFused({&x}, {{6, 0, -1}}, {0}, out).isOk());  // result is an input
  EXPECT_FALSE(runFused({&x, &small}, {{0, 0, 1}}, {2}, out).isOk()); // shapes
  for (int64_t i = 0; i < out[0].size(); ++i)
    ASSERT_EQ(out[0].getBits(i), 0u);
}

} // namespace
