//===- OptimizerKernelsTest.cpp - AdamW and SGD against torch -------------===//
//
// Checks the optimizer kernels three ways: against torch 1.13 bit for bit
// (three steps of torch.optim.AdamW / SGD on 19 elements, which covers
// torch's vectorized body and its scalar tail; the expected bits below were
// printed by /usr/bin/python3 with the script quoted above them), against
// values worked out by hand on exactly representable inputs, and for the
// properties the plans rely on: updating in place (results aliasing
// operands) gives the same bits as separate buffers, a zero momentum buffer
// reproduces torch's first-step clone, and bad operands are errors.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::TestTensor;

// Produced by this script (torch 1.13.0a0, /usr/bin/python3):
//   p0 = [0.5, -1.25, 2.0, 0.0, -0.375, 3.5, -2.75, 1.0, 0.125, -0.5, 4.0,
//         -3.0, 0.75, 1.5, -1.0, 0.25, 2.5, -0.625, 0.875]
//   grads = [[0.1*(i+1)*(-1)**i + 0.01*s for i in range(19)] for s in range(3)]
//   lrs = [1e-2, 5e-3, 2e-3]
//   p = torch.nn.Parameter(torch.tensor(p0, dtype=dtype)); opt = Kind([p], lr=lrs[0], **kw)
//   for s in range(3):
//       opt.param_groups[0]["lr"] = lrs[s]
//       p.grad = torch.tensor(grads[s], dtype=dtype); opt.step()
//   then the bits of p and of opt.state[p]'s tensors.
// AdamW(betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01), torch.float32
const uint32_t kAdamW32Param[] = {
    0x3ef73eed, 0xbf9dcc95, 0x3ffdc796, 0x3c8b31c3, 0xbec8ac65, 0x40610cb0,
    0xc0310ee9, 0x3f822757, 0x3ddd22e8, 0xbef7411c, 0x407ede4d, 0xc03ee12a,
    0x3f3b9d74, 0x3fc2249d, 0xbf822784, 0x3e88ae52, 0x401ee27e, 0xbf1b9f13,
    0x3f5b9c1a};
const uint32_t kAdamW32ExpAvg[] = {
    0x3cf5c290, 0xbd521ff3, 0x3dac710d, 0xbdd81063, 0x3e0db8ba, 0xbe238865,
    0x3e4538ef, 0xbe5b089a, 0x3e7cb923, 0xbe894467, 0x3e9a1cac, 0xbea50481,
    0x3eb5dcc6, 0xbec0c49c, 0x3ed19ce1, 0xbedc84b5, 0x3eed5cfa, 0xbef844d0,
    0x3f048e8a};
const uint32_t kAdamW32ExpAvgSq[] = {
    0x3818f51f, 0x38e34c31, 0x39971cc6, 0x39ef170d, 0x3a4c677a, 0x3a88c3c7,
    0x3ac60d4d, 0x3af52ecf, 0x3b22a9f0, 0x3b40836d, 0x3b7203bc, 0x3b8b12fa,
    0x3ba88a04, 0x3bbdbf7e, 0x3bdfed6b, 0x3bf84745, 0x3c0f960a, 0x3c1d5525,
    0x3c3322fe};
// AdamW(betas=(0.9, 0.999), eps=1e-08, weight_decay=0.01), torch.float64
const uint64_t kAdamW64Param[] = {
    0x3fdee7dda20fac1eull, 0xbff3b9928e6c2171ull, 0x3fffb8f2cdbdc533ull,
    0x3f916638588ace41ull, 0xbfd9158c941fad53ull, 0x400c2195f6e15ac1ull,
    0xc00621dd3e2636eeull, 0x3ff044eaece6f908ull, 0x3fbba45d1eb18a67ull,
    0xbfdee8239de863d6ull, 0x400fdbc9ce28d84full, 0xc007dc256168e1d9ull,
    0x3fe773ae8f76e4edull, 0x3ff844937b46738dull, 0xbff044f0843065f8ull,
    0x3fd115ca42164c01ull, 0x4003dc4fe880ba64ull, 0xbfe373e2841ffc12ull,
    0x3feb738345a1a22full};
const uint64_t kAdamW64ExpAvg[] = {
    0x3f9eb851eb851eb7ull, 0xbfaa43fe5c91d14dull, 0x3fb58e219652bd3cull,
    0xbfbb020c49ba5e34ull, 0x3fc1b71758e21964ull, 0xbfc4710cb295e9e1ull,
    0x3fc8a71de69ad42bull, 0xbfcb6113404ea4a7ull, 0x3fcf972474538ef1ull,
    0xbfd1288ce703afb7ull, 0x3fd34395810624dcull, 0xbfd4a0902de00d1bull,
    0x3fd6bb98c7e2823full, 0xbfd8189374bc6a7eull, 0x3fda339c0ebedfa3ull,
    0xbfdb9096bb98c7e1ull, 0x3fddab9f559b3d07ull, 0xbfdf089a02752544ull,
    0x3fe091d14e3bcd35ull};
const uint64_t kAdamW64ExpAvgSq[] = {
    0x3f031ea3d8af7d8full, 0x3f1c6985e92d3c97ull, 0x3f32e3989c68b3d4ull,
    0x3f3de2e19a8fe7e1ull, 0x3f498cef38c8ce8cull, 0x3f511878dbaaa970ull,
    0x3f58c1a97ea42ae0ull, 0x3f5ea5d9bda6e232ull, 0x3f64553de6ecbbe2ull,
    0x3f68106d864c521dull, 0x3f6e4077450226f9ull, 0x3f71625f321ffbe4ull,
    0x3f7511406cc92b5aull, 0x3f77b7efbc57310bull, 0x3f7bfdad524ea589ull,
    0x3f7f08e861cbc885ull, 0x3f81f2c12988c106ull, 0x3f83aaa4913ee128ull,
    0x3f86645fb788e070ull};
// SGD(momentum=0.9, weight_decay=0.01), torch.float32
const uint32_t kSgd32MomentumParam[] = {
    0x3efe9ae5, 0xbf9f5606, 0x3ffef72b, 0x3c218a0c, 0xbec662ff, 0x4060e4e8,
    0xc0311456, 0x3f828188, 0x3dd1c8d2, 0xbef33ba7, 0x407e2ccd, 0xc03e0b98,
    0x3f37a1a9, 0x3fc46760, 0xbf84c430, 0x3e94538f, 0x401d3df6, 0xbf148150,
    0x3f53cbc5};
const uint32_t kSgd32MomentumMomentumBuffer[] = {
    0x3ea085a2, 0xbf0bfc10, 0x3f65675a, 0xbf870685, 0x3fafd542, 0xbfc04130,
    0x3fecf6d6, 0xc00725b0, 0x401e26fe, 0xc02c6ed3, 0x40478e88, 0xc05373ea,
    0x40649adc, 0xc06e554a, 0x40822090, 0xc08997b8, 0x40968117, 0xc09bb18c,
    0x40a66ff8};
// SGD(momentum=0.9, weight_decay=0.01, nesterov=True), torch.float32
const uint32_t kSgd32NesterovParam[] = {
    0x3efdc8e1, 0xbf9ef39d, 0x3ffe5c78, 0x3c7f4e6d, 0xbeca1ce4, 0x406169e3,
    0xc031b575, 0x3f83f671, 0x3db6d922, 0xbeebcf3b, 0x407d1c91, 0xc03ce891,
    0x3f32c180, 0x3fc6f71a, 0xbf878b03, 0x3ea0267e, 0x401ba2b3, 0xbf0dd166,
    0x3f4cb007};
const uint32_t kSgd32NesterovMomentumBuffer[] = {
    0x3ea082ab, 0xbf0bf925, 0x3f6562e4, 0xbf8703c3, 0x3fafd1ce, 0xbfc03d4a,
    0x3fecf229, 0xc00722f6, 0x401e23dd, 0xc02c6b58, 0x40478a92, 0xc0536faa,
    0x40649652, 0xc06e507f, 0x40821dfa, 0xc08994f4, 0x40967e19, 0xc09bae6b,
    0x40a66ca8};
// SGD(weight_decay=0.01), torch.float32
const uint32_t kSgd32PlainParam[] = {
    0x3eff0a40, 0xbf9f8c94, 0x3fff4acd, 0x3bdbdce2, 0xbec45d80, 0x40609be3,
    0xc030bcc7, 0x3f81b51a, 0x3de07072, 0xbef74c8a, 0x407ec105, 0xc03eaae6,
    0x3f3a4978, 0x3fc30089, 0xbf8340ec, 0x3e8ddb9f, 0x401e1e16, 0xbf1829a1,
    0x3f57aba5};
// SGD(momentum=0.9, weight_decay=0.01, nesterov=True), torch.float64
const uint64_t kSgd64NesterovParam[] = {
    0x3fdfb91c2653b895ull, 0xbff3de73982c6769ull, 0x3fffcb8efe2c01c8ull,
    0x3f8fe9cdb9c83241ull, 0xbfd9439c8bfb5f2aull, 0x400c2d3c5514a5dfull,
    0xc00636aea214d8afull, 0x3ff07ece1b4fa84eull, 0x3fb6db24488e7fdcull,
    0xbfdd79e7651dad55ull, 0x400fa39233bf0893ull, 0xc0079d1234108762ull,
    0x3fe6582ffeb1f37full, 0x3ff8dee340d73c61ull, 0xbff0f160816845f4ull,
    0x3fd404cfcb4332c2ull, 0x4003745653d9f6a3ull, 0xbfe1ba2cc2b95a27ull,
    0x3fe99600f475ff19ull};
const uint64_t kSgd64NesterovMomentumBuffer[] = {
    0x3fd41055620cc21aull, 0xbfe17f24bcd995d9ull, 0x3fecac5c725b8539ull,
    0xbff0e0786fc00ec9ull, 0x3ff5fa39afdd4f33ull, 0xbff807a94bcbe41cull,
    0x3ffd9e45268cdbcbull, 0xc000e45eb04b1ac5ull, 0x4003c47bb7718a7eull,
    0xc0058d6b20a063cfull, 0x4008f15275ac86c4ull, 0xc00a6df52b058c88ull,
    0x400c92ca4a366959ull, 0xc00dca0ffefb9783ull, 0x401043bf42ec0db8ull,
    0xc011329e84667451ull, 0x4012cfc3152691eaull, 0xc01375cd7c6c22f0ull,
    0x4014cd950c9868f2ull};

constexpr int kElements = 19;
const double kInitialParam[kElements] = {0.5, -1.25, 2.0, 0.0,  -0.375, 3.5, -2.75,
                                         1.0, 0.125, -0.5, 4.0, -3.0,   0.75, 1.5,
                                         -1.0, 0.25, 2.5, -0.625, 0.875};
const double kLearningRates[3] = {1e-2, 5e-3, 2e-3};

/// Python's grads[s][i], computed with the same double operations.
double torchGrad(int s, int i) { return 0.1 * (i + 1) * (i % 2 ? -1 : 1) + 0.01 * s; }

/// A scalar operand (lr or step).
struct Scalar : TestTensor {
  Scalar(DType dtype, double value) : TestTensor(dtype, {}) { set(0, value); }
};

TestTensor filled(DType dtype, const double *values, int n) {
  TestTensor t(dtype, {n});
  for (int i = 0; i < n; ++i)
    t.set(i, values[i]);
  return t;
}

template <typename Bits>
void expectBits(const TestTensor &got, const Bits (&expected)[kElements], const std::string &what) {
  for (int i = 0; i < kElements; ++i)
    EXPECT_EQ(got.getBits(i), static_cast<uint64_t>(expected[i]))
        << what << " element " << i << ": got " << got.get(i);
}

const AdamWConfig kAdamW{0.9f, 0.999f, 1e-8f, 0.01f};

/// Three in-place AdamW steps on the torch test's data.
void runAdamW(DType dtype, TestTensor &param, TestTensor &expAvg, TestTensor &expAvgSq) {
  param = filled(dtype, kInitialParam, kElements);
  expAvg = TestTensor(dtype, {kElements});
  expAvgSq = TestTensor(dtype, {kElements});
  for (int s = 0; s < 3; ++s) {
    TestTensor grad(dtype, {kElements});
    for (int i = 0; i < kElements; ++i)
      grad.set(i, torchGrad(s, i));
    Scalar lr(DType::F64, kLearningRates[s]), step(DType::I64, s + 1);
    Status status = adamw(param.ref(), grad.ref(), expAvg.ref(), expAvgSq.ref(), lr.ref(),
                          step.ref(), kAdamW, param.ref(), expAvg.ref(), expAvgSq.ref());
    ASSERT_TRUE(status.isOk()) << status.message();
  }
}

/// Three in-place SGD steps on the torch test's data (momentum buffer zero
/// at first, as the plans hold it).
void runSgd(DType dtype, const SgdConfig &config, bool withBuffer, TestTensor &param,
            TestTensor &buffer) {
  param = filled(dtype, kInitialParam, kElements);
  buffer = TestTensor(dtype, {kElements});
  for (int s = 0; s < 3; ++s) {
    TestTensor grad(dtype, {kElements});
    for (int i = 0; i < kElements; ++i)
      grad.set(i, torchGrad(s, i));
    Scalar lr(DType::F64, kLearningRates[s]);
    TensorRef bufferRef = buffer.ref();
    Status status = sgd(param.ref(), grad.ref(), withBuffer ? &bufferRef : nullptr, lr.ref(),
                        config, param.ref(), withBuffer ? &bufferRef : nullptr);
    ASSERT_TRUE(status.isOk()) << status.message();
  }
}

TEST(OptimizerKernels, AdamWMatchesTorchBitForBit) {
  TestTensor param(DType::F32, {}), expAvg(DType::F32, {}), expAvgSq(DType::F32, {});
  runAdamW(DType::F32, param, expAvg, expAvgSq);
  expectBits(param, kAdamW32Param, "f32 param");
  expectBits(expAvg, kAdamW32ExpAvg, "f32 exp_avg");
  expectBits(expAvgSq, kAdamW32ExpAvgSq, "f32 exp_avg_sq");
  runAdamW(DType::F64, param, expAvg, expAvgSq);
  expectBits(param, kAdamW64Param, "f64 param");
  expectBits(expAvg, kAdamW64ExpAvg, "f64 exp_avg");
  expectBits(expAvgSq, kAdamW64ExpAvgSq, "f64 exp_avg_sq");
}

TEST(OptimizerKernels, SgdMatchesTorchBitForBit) {
  TestTensor param(DType::F32, {}), buffer(DType::F32, {});
  runSgd(DType::F32, {0.9f, 0.01f, false}, true, param, buffer);
  expectBits(param, kSgd32MomentumParam, "momentum param");
  expectBits(buffer, kSgd32MomentumMomentumBuffer, "momentum buffer");
  runSgd(DType::F32, {0.9f, 0.01f, true}, true, param, buffer);
  expectBits(param, kSgd32NesterovParam, "nesterov param");
  expectBits(buffer, kSgd32NesterovMomentumBuffer, "nesterov buffer");
  runSgd(DType::F32, {0.0f, 0.01f, false}, false, param, buffer);
  expectBits(param, kSgd32PlainParam, "plain param");
  runSgd(DType::F64, {0.9f, 0.01f, true}, true, param, buffer);
  expectBits(param, kSgd64NesterovParam, "f64 nesterov param");
  expectBits(buffer, kSgd64NesterovMomentumBuffer, "f64 nesterov buffer");
}

/// AdamW by hand on exact inputs: step 1 without decay moves every element
/// by -lr * g / (|g| + eps) (the bias corrections undo the moment decay);
/// decay alone scales by 1 - lr * wd; step 2 with a constant gradient moves
/// by -lr again (mhat = g, vhat = g^2).
TEST(OptimizerKernels, AdamWByHand) {
  const double g[3] = {0.5, -2.0, 0.0};
  TestTensor param = filled(DType::F64, g, 3), grad = filled(DType::F64, g, 3);
  const double p0[3] = {1.0, 1.0, 1.0};
  param = filled(DType::F64, p0, 3);
  TestTensor m(DType::F64, {3}), v(DType::F64, {3});
  Scalar lr(DType::F64, 0.1), step1(DType::I64, 1), step2(DType::I64, 2);
  const AdamWConfig noDecay{0.9f, 0.999f, 1e-8f, 0.0f};
  ASSERT_TRUE(adamw(param.ref(), grad.ref(), m.ref(), v.ref(), lr.ref(), step1.ref(), noDecay,
                    param.ref(), m.ref(), v.ref()).isOk());
  for (int i = 0; i < 3; ++i) {
    const double expected = 1.0 - 0.1 * g[i] / (std::abs(g[i]) + 1e-8);
    EXPECT_NEAR(param.get(i), expected, 1e-15) << i;
    EXPECT_NEAR(m.get(i), 0.1 * g[i], 1e-16) << i;
    EXPECT_NEAR(v.get(i), 0.001 * g[i] * g[i], 1e-17) << i;
  }
  ASSERT_TRUE(adamw(param.ref(), grad.ref(), m.ref(), v.ref(), lr.ref(), step2.ref(), noDecay,
                    param.ref(), m.ref(), v.ref()).isOk());
  for (int i = 0; i < 3; ++i)
    EXPECT_NEAR(param.get(i), 1.0 - 0.2 * g[i] / (std::abs(g[i]) + 1e-8), 1e-12) << i;
  // Decay only: a zero gradient leaves the moments at 0 and the update 0.
  TestTensor zero(DType::F64, {3}), m2(DType::F64, {3}), v2(DType::F64, {3});
  param = filled(DType::F64, p0, 3);
  const AdamWConfig decayOnly{0.9f, 0.999f, 1e-8f, 0.5f};
  ASSERT_TRUE(adamw(param.ref(), zero.ref(), m2.ref(), v2.ref(), lr.ref(), step1.ref(), decayOnly,
                    param.ref(), m2.ref(), v2.ref()).isOk());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(param.get(i), 1.0 - 0.1 * 0.5) << i;
}

/// SGD by hand with exactly representable numbers (lr 0.5, momentum 0.5,
/// weight decay 0.25), two steps with gradient 1 on parameter 2:
///   step 1: d = 1 + 0.25*2 = 1.5; buf = 1.5; p = 2 - 0.75 = 1.25
///   step 2: d = 1 + 0.25*1.25 = 1.3125; buf = 0.75 + 1.3125 = 2.0625;
///           p = 1.25 - 1.03125 = 0.21875
/// and with nesterov: step 1 d = 1.5 + 0.75 = 2.25, p = 0.875; step 2
/// d = 1.21875, buf = 1.96875, d = 2.203125, p = -0.2265625.
TEST(OptimizerKernels, SgdByHand) {
  for (bool nesterov : {false, true}) {
    const double two = 2.0, one = 1.0;
    TestTensor param = filled(DType::F32, &two, 1), grad = filled(DType::F32, &one, 1);
    TestTensor buffer(DType::F32, {1});
    Scalar lr(DType::F64, 0.5);
    TensorRef bufferRef = buffer.ref();
    const SgdConfig config{0.5f, 0.25f, nesterov};
    ASSERT_TRUE(sgd(param.ref(), grad.ref(), &bufferRef, lr.ref(), config, param.ref(),
                    &bufferRef).isOk());
    EXPECT_EQ(param.get(0), nesterov ? 0.875 : 1.25);
    EXPECT_EQ(buffer.get(0), 1.5);
    ASSERT_TRUE(sgd(param.ref(), grad.ref(), &bufferRef, lr.ref(), config, param.ref(),
                    &bufferRef).isOk());
    EXPECT_EQ(buffer.get(0), nesterov ? 1.96875 : 2.0625);
    EXPECT_EQ(param.get(0), nesterov ? -0.2265625 : 0.21875);
  }
}

/// torch's first step clones d_p into the buffer; the plans start from a
/// zero buffer and compute momentum * 0 + d_p, which is d_p exactly (for
/// every finite nonzero d_p; a d_p of -0 would become +0).
TEST(OptimizerKernels, ZeroMomentumBufferIsTorchsClone) {
  TestTensor param(DType::F32, {kElements}), grad(DType::F32, {kElements});
  TestTensor buffer(DType::F32, {kElements}), expectedBuffer(DType::F32, {kElements});
  for (int i = 0; i < kElements; ++i) {
    param.set(i, kInitialParam[i]);
    grad.set(i, torchGrad(0, i) * std::pow(10.0, i - 9)); // many magnitudes
  }
  Scalar lr(DType::F64, 0.01);
  const SgdConfig config{0.9f, 0.01f, false};
  TensorRef bufferRef = buffer.ref();
  ASSERT_TRUE(sgd(param.ref(), grad.ref(), &bufferRef, lr.ref(), config,
                  TestTensor(DType::F32, {kElements}).ref(), &bufferRef).isOk());
  // d_p = grad.add(param, alpha=wd), fused as torch fuses it.
  const float wd = 0.01f;
  for (int i = 0; i < kElements; ++i) {
    const float dp =
        std::fma(static_cast<float>(param.get(i)), wd, static_cast<float>(grad.get(i)));
    float bits;
    std::memcpy(&bits, buffer.as<float>() + i, sizeof bits);
    EXPECT_EQ(std::memcmp(&bits, &dp, sizeof bits), 0) << i << ": " << bits << " vs " << dp;
  }
}

/// The plans alias every result with its operand; separate result buffers
/// must give the same bits and leave the operands untouched.
TEST(OptimizerKernels, InPlaceEqualsOutOfPlace) {
  for (DType dtype : {DType::F32, DType::F64}) {
    TestTensor param(dtype, {kElements}), grad(dtype, {kElements}), m(dtype, {kElements}),
        v(dtype, {kElements});
    for (int i = 0; i < kElements; ++i) {
      param.set(i, kInitialParam[i]);
      grad.set(i, torchGrad(1, i));
      m.set(i, 0.01 * i);
      v.set(i, 0.001 * i);
    }
    const TestTensor param0 = param, m0 = m, v0 = v;
    TestTensor pOut(dtype, {kElements}), mOut(dtype, {kElements}), vOut(dtype, {kElements});
    Scalar lr(DType::F64, 3e-3), step(DType::I64, 7);
    ASSERT_TRUE(adamw(param.ref(), grad.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), kAdamW,
                      pOut.ref(), mOut.ref(), vOut.ref()).isOk());
    EXPECT_EQ(param.storage, param0.storage);
    EXPECT_EQ(m.storage, m0.storage);
    ASSERT_TRUE(adamw(param.ref(), grad.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), kAdamW,
                      param.ref(), m.ref(), v.ref()).isOk());
    EXPECT_EQ(param.storage, pOut.storage);
    EXPECT_EQ(m.storage, mOut.storage);
    EXPECT_EQ(v.storage, vOut.storage);

    TestTensor sp = param0, buf = m0, spOut(dtype, {kElements}), bufOut(dtype, {kElements});
    TensorRef bufRef = buf.ref(), bufOutRef = bufOut.ref();
    const SgdConfig config{0.9f, 0.01f, true};
    ASSERT_TRUE(
        sgd(sp.ref(), grad.ref(), &bufRef, lr.ref(), config, spOut.ref(), &bufOutRef).isOk());
    EXPECT_EQ(sp.storage, param0.storage);
    ASSERT_TRUE(sgd(sp.ref(), grad.ref(), &bufRef, lr.ref(), config, sp.ref(), &bufRef).isOk());
    EXPECT_EQ(sp.storage, spOut.storage);
    EXPECT_EQ(buf.storage, bufOut.storage);
  }
}

/// Dynamic loss scaling's found_inf flag: non-zero skips the update (in
/// place nothing changes; into other buffers the operands are copied), and
/// zero updates exactly as without a flag. The flag must be an f32 scalar.
TEST(OptimizerKernels, FoundInfSkipsTheUpdate) {
  const double p0[3] = {1.0, -2.0, 0.5}, g0[3] = {0.25, 1.0, -4.0}, v0[3] = {0.5, 2.0, 0.125};
  Scalar lr(DType::F64, 0.1), step(DType::I64, 3), found(DType::F32, 1.0),
      clear(DType::F32, 0.0), found64(DType::F64, 1.0);
  const TensorRef foundRef = found.ref(), clearRef = clear.ref(), found64Ref = found64.ref();
  // AdamW in place, skipped: parameter and moments keep their bits.
  TestTensor p = filled(DType::F32, p0, 3), g = filled(DType::F32, g0, 3);
  TestTensor m = filled(DType::F32, g0, 3), v = filled(DType::F32, v0, 3);
  ASSERT_TRUE(adamw(p.ref(), g.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), kAdamW, p.ref(),
                    m.ref(), v.ref(), &foundRef).isOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(p.get(i), static_cast<float>(p0[i])) << i;
    EXPECT_EQ(m.get(i), static_cast<float>(g0[i])) << i;
    EXPECT_EQ(v.get(i), static_cast<float>(v0[i])) << i;
  }
  // Skipped into other buffers: the operands' values are copied there.
  TestTensor pOut(DType::F32, {3}), mOut(DType::F32, {3}), vOut(DType::F32, {3});
  ASSERT_TRUE(adamw(p.ref(), g.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), kAdamW,
                    pOut.ref(), mOut.ref(), vOut.ref(), &foundRef).isOk());
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(pOut.get(i), p.get(i)) << i;
  // A zero flag is the update without one, bit for bit.
  TestTensor q = filled(DType::F32, p0, 3), mq = filled(DType::F32, g0, 3),
             vq = filled(DType::F32, v0, 3);
  ASSERT_TRUE(adamw(p.ref(), g.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), kAdamW, p.ref(),
                    m.ref(), v.ref(), &clearRef).isOk());
  ASSERT_TRUE(adamw(q.ref(), g.ref(), mq.ref(), vq.ref(), lr.ref(), step.ref(), kAdamW, q.ref(),
                    mq.ref(), vq.ref()).isOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_NE(p.get(i), static_cast<float>(p0[i])) << i;
    EXPECT_EQ(p.get(i), q.get(i)) << i;
    EXPECT_EQ(m.get(i), mq.get(i)) << i;
    EXPECT_EQ(v.get(i), vq.get(i)) << i;
  }
  // SGD with momentum, skipped and not.
  TestTensor sp = filled(DType::F32, p0, 3), sb = filled(DType::F32, g0, 3);
  TensorRef sbRef = sb.ref();
  const SgdConfig config{0.9f, 0.01f, false};
  ASSERT_TRUE(sgd(sp.ref(), g.ref(), &sbRef, lr.ref(), config, sp.ref(), &sbRef, &foundRef).isOk());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(sp.get(i), static_cast<float>(p0[i])) << i;
    EXPECT_EQ(sb.get(i), static_cast<float>(g0[i])) << i;
  }
  ASSERT_TRUE(sgd(sp.ref(), g.ref(), &sbRef, lr.ref(), config, sp.ref(), &sbRef, &clearRef).isOk());
  EXPECT_NE(sp.get(0), static_cast<float>(p0[0]));
  // The flag's type is checked before anything is written.
  Status wrong = adamw(p.ref(), g.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), kAdamW, p.ref(),
                       m.ref(), v.ref(), &found64Ref);
  EXPECT_NE(wrong.message().find("found_inf must be a f32 scalar"), std::string::npos)
      << wrong.message();
  EXPECT_FALSE(
      sgd(sp.ref(), g.ref(), &sbRef, lr.ref(), config, sp.ref(), &sbRef, &found64Ref).isOk());
}

TEST(OptimizerKernels, Errors) {
  TestTensor p(DType::F32, {4}), g(DType::F32, {4}), m(DType::F32, {4}), v(DType::F32, {4});
  TestTensor half(DType::F16, {4}), short3(DType::F32, {3});
  Scalar lr(DType::F64, 0.1), lr32(DType::F32, 0.1), step(DType::I64, 1), step0(DType::I64, 0);
  auto run = [&](const TestTensor &param, const TestTensor &grad, const Scalar &rate,
                 const Scalar &number) {
    return adamw(param.ref(), grad.ref(), m.ref(), v.ref(), rate.ref(), number.ref(), kAdamW,
                 p.ref(), m.ref(), v.ref());
  };
  EXPECT_TRUE(run(p, g, lr, step).isOk());
  EXPECT_NE(run(p, g, lr, step0).message().find("step 0"), std::string::npos);
  EXPECT_NE(run(p, g, lr32, step).message().find("lr must be a f64 scalar"), std::string::npos)
      << run(p, g, lr32, step).message();
  EXPECT_FALSE(run(p, short3, lr, step).isOk());
  EXPECT_FALSE(adamw(half.ref(), half.ref(), half.ref(), half.ref(), lr.ref(), step.ref(), kAdamW,
                     half.ref(), half.ref(), half.ref()).isOk());
  TensorRef buffer = m.ref();
  // A buffer operand without its result; an i64 learning rate.
  EXPECT_FALSE(
      sgd(p.ref(), g.ref(), &buffer, lr.ref(), {0.9f, 0.0f, false}, p.ref(), nullptr).isOk());
  EXPECT_FALSE(
      sgd(p.ref(), g.ref(), nullptr, step.ref(), {0.0f, 0.0f, false}, p.ref(), nullptr).isOk());
}

} // namespace
