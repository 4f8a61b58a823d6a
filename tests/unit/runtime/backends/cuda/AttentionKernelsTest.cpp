//===- AttentionKernelsTest.cpp - CUDA attention vs the CPU's, bit for bit ===//
//
// The CUDA attention kernels (AttentionKernels.cu) under SIMT emulation
// against the CPU's (cpu/kernels/AttentionKernels.cpp), the cases of the
// CPU test (AttentionKernelsTest.cpp) and more: f32, f64, bf16 and f16;
// no mask, a bool [Tq, Tk] mask with a fully masked row, an additive f32
// [B, 1, 1, Tk] mask with a -inf key, an additive mask of the operands'
// type over the full [B, H, Tq, Tk]; causal and not; grouped-query heads;
// Tq != Tk both ways; sizes that are not a multiple of the 64-key tile
// and rows that span several tiles; an input whose every row is masked.
// The forward's out and lse and the gradient's dq, dk and dv must be the
// CPU's bits (the gradient is given the CPU forward's out and lse, as a
// plan would give it the forward's results). The CPU side runs its exact
// kernels (FSDP_CPU_GEMM=naive), the ones the CUDA twin follows: by
// default 16-bit attention goes through oneDNN's products
// (cpu/kernels/AttentionGemms.h), within tolerance of them, not their bits.
// Bad operands are refused by both.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

#include "runtime/backends/cpu/CpuKernels.h"

#include <cstdlib>
#include <limits>

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

struct Case {
  int64_t b, h, hkv, tq, tk, d, dv;
  bool causal;
  // 0 none, 1 bool [Tq, Tk] (row 1 fully masked), 2 f32 [B, 1, 1, Tk],
  // 3 the operands' type [B, H, Tq, Tk], 4 bool [Tq, Tk] all false.
  int mask;
  // dropout_p (seed kSeed at the harness's step).
  float drop = 0.0f;
};

constexpr int64_t kSeed = 7;

std::optional<TestTensor> maskFor(DType t, const Case &c) {
  switch (c.mask) {
  case 1:
  case 4: {
    TestTensor m(DType::Bool, {c.tq, c.tk});
    for (int64_t i = 0; i < c.tq; ++i)
      for (int64_t j = 0; j < c.tk; ++j)
        m.set(i * c.tk + j, c.mask == 4 || i == 1 ? 0 : ((i + j) % 3 != 0 || j == 0));
    return m;
  }
  case 2: {
    TestTensor m = uniform(DType::F32, {c.b, 1, 1, c.tk}, 5, -2, 1);
    m.set(c.tk - 1, -std::numeric_limits<double>::infinity());
    return m;
  }
  case 3:
    return uniform(t, {c.b, c.h, c.tq, c.tk}, 6, -3, 1);
  default:
    return std::nullopt;
  }
}

/// FSDP_CPU_GEMM=naive while in scope: the CPU's exact attention kernels.
struct ExactCpuRoute {
  ExactCpuRoute() { setenv("FSDP_CPU_GEMM", "naive", 1); }
  ~ExactCpuRoute() { unsetenv("FSDP_CPU_GEMM"); }
};

void checkCase(DType t, const Case &c) {
  const ExactCpuRoute exact;
  SCOPED_TRACE(testing::Message() << dtypeName(t) << " B" << c.b << " H" << c.h << "/" << c.hkv
                                  << " Tq" << c.tq << " Tk" << c.tk << " D" << c.d << "/" << c.dv
                                  << " causal " << c.causal << " mask " << c.mask << " dropout "
                                  << c.drop);
  const Dims qd{c.b, c.h, c.tq, c.d}, kd{c.b, c.hkv, c.tk, c.d}, vd{c.b, c.hkv, c.tk, c.dv},
      od{c.b, c.h, c.tq, c.dv}, ld{c.b, c.h, c.tq};
  const DType lseType = t == DType::F64 ? DType::F64 : DType::F32;
  const TestTensor q = uniform(t, qd, 1, -2, 2), k = uniform(t, kd, 2, -2, 2),
                   v = uniform(t, vd, 3, -1, 1), dout = uniform(t, od, 4, -1, 1);
  const std::optional<TestTensor> mask = maskFor(t, c);
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));

  KernelCase forward(Kernel::Attention);
  forward.in(q).in(k).in(v);
  mask ? (void)forward.in(*mask) : (void)forward.absent();
  forward.out(t, od).out(lseType, ld);
  forward.ints = {c.causal, kSeed};
  forward.floats = {scale, c.drop};
  expectSameAsCpu(forward, Match::Bits);

  // The gradient reads the forward's results: the CPU's.
  TestTensor out(t, od), lse(lseType, ld);
  const TensorRef maskRef = mask ? mask->ref() : TensorRef();
  const AttentionDropout dropout{c.drop, kSeed, forward.step};
  ASSERT_TRUE(cpu::attention(q.ref(), k.ref(), v.ref(), mask ? &maskRef : nullptr, c.causal, scale,
                             dropout, out.ref(), lse.ref())
                  .isOk());
  KernelCase backward(Kernel::AttentionGrad);
  backward.in(q).in(k).in(v);
  mask ? (void)backward.in(*mask) : (void)backward.absent();
  backward.in(out).in(lse).in(dout);
  backward.out(t, qd).out(t, kd).out(t, vd);
  backward.ints = {c.causal, kSeed};
  backward.floats = {scale, c.drop};
  expectSameAsCpu(backward, Match::Bits);
}

TEST(CudaAttention, ForwardAndGradientAreTheCpuBits) {
  const Case cases[] = {
      {2, 2, 2, 5, 5, 4, 4, false, 0},      {1, 4, 2, 9, 9, 8, 8, true, 0},
      {1, 4, 1, 7, 11, 4, 6, false, 1},     {2, 2, 1, 6, 6, 4, 4, true, 1},
      {2, 2, 2, 70, 131, 24, 16, false, 2}, {1, 2, 2, 130, 130, 8, 8, true, 2},
      {1, 2, 1, 131, 67, 8, 12, true, 3},   {2, 2, 2, 67, 140, 5, 3, true, 0},
      {1, 1, 1, 1, 1, 1, 1, false, 0},      {1, 2, 2, 65, 64, 16, 16, false, 3},
  };
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::F16})
    for (const Case &c : cases)
      checkCase(t, c);
}

TEST(CudaAttention, DropoutIsTheCpuBits) {
  const Case cases[] = {
      {2, 2, 1, 9, 9, 8, 8, true, 0, 0.25f},
      {1, 2, 2, 70, 131, 8, 8, false, 2, 0.5f},
      {1, 4, 2, 67, 67, 4, 6, true, 1, 0.1f},
  };
  for (DType t : {DType::F32, DType::BF16})
    for (const Case &c : cases)
      checkCase(t, c);
}

TEST(CudaAttention, FullyMaskedInputsAreZeroOnBoth) {
  for (DType t : {DType::F32, DType::BF16})
    for (bool causal : {false, true})
      checkCase(t, {1, 2, 1, 5, 70, 4, 4, causal, 4});
}

/// Both backends refuse `c`.
void expectRefusedByBoth(const KernelCase &c) {
  LaunchedCase cpuRun(c, launchCpuKernel), simtRun(c, launchSimtKernel);
  EXPECT_FALSE(cpuRun.status.isOk());
  EXPECT_FALSE(simtRun.status.isOk());
}

TEST(CudaAttention, BadOperandsAreRefusedByBoth) {
  const DType t = DType::F32;
  // Key heads that do not divide the query heads.
  KernelCase heads(Kernel::Attention);
  heads.in(uniform(t, {1, 3, 4, 4}, 1))
      .in(uniform(t, {1, 2, 4, 4}, 2))
      .in(uniform(t, {1, 2, 4, 4}, 3));
  heads.absent().out(t, {1, 3, 4, 4}).out(t, {1, 3, 4});
  heads.ints = {0, 0};
  heads.floats = {1, 0};
  expectRefusedByBoth(heads);
  // A mask that does not broadcast, and mixed operand types.
  KernelCase badMask(Kernel::Attention);
  badMask.in(uniform(t, {1, 2, 4, 4}, 1))
      .in(uniform(t, {1, 2, 4, 4}, 2))
      .in(uniform(t, {1, 2, 4, 4}, 3));
  badMask.in(TestTensor(DType::Bool, {5, 4})).out(t, {1, 2, 4, 4}).out(t, {1, 2, 4});
  badMask.ints = {0, 0};
  badMask.floats = {1, 0};
  expectRefusedByBoth(badMask);
  KernelCase mixed(Kernel::Attention);
  mixed.in(uniform(t, {1, 2, 4, 4}, 1)).in(uniform(DType::F16, {1, 2, 4, 4}, 2));
  mixed.in(uniform(t, {1, 2, 4, 4}, 3)).absent().out(t, {1, 2, 4, 4}).out(t, {1, 2, 4});
  mixed.ints = {0, 0};
  mixed.floats = {1, 0};
  expectRefusedByBoth(mixed);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
