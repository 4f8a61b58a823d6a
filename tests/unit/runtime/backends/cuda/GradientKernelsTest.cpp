//===- GradientKernelsTest.cpp - CUDA backward kernels vs CPU --------------===//
//
// The CUDA gradient kernels (GradientKernels.cu) under SIMT emulation
// against the CPU's: activation gradients, softmax and log-softmax
// gradients over the last and a middle axis, layer norm's dx/dscale/dbias,
// gather's adjoint with repeated and negative indices (and one out of
// range, refused by both), slice's adjoint with negative steps, reduce
// max's adjoint with ties, dropout's. Bit for bit, but for log-softmax's
// exp (shared) — everything here is.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

TEST(CudaGradient, ActivationAndDropoutGradients) {
  for (DType t : kFloats) {
    for (Kernel k : {Kernel::ReluGrad, Kernel::ErfGrad, Kernel::TanhGrad, Kernel::SigmoidGrad})
      expectSameAsCpu(
          KernelCase(k).in(uniform(t, {2100}, 1, -3, 3)).in(uniform(t, {2100}, 2)).out(t, {2100}),
          Match::Bits);
    TestTensor mask(DType::Bool, {2100});
    for (int64_t i = 0; i < mask.size(); ++i)
      mask.set(i, i % 3 != 0);
    KernelCase d(Kernel::DropoutGrad);
    d.in(uniform(t, {2100}, 3)).in(mask).out(t, {2100});
    d.floats = {0.3f};
    expectSameAsCpu(d, Match::Bits);
  }
}

TEST(CudaGradient, SoftmaxGradients) {
  const std::vector<std::pair<Dims, int64_t>> cases = {
      {{4, 7}, 1}, {{2, 1030}, 1}, {{600, 5}, 1}, {{3, 6, 5}, 1}, {{4, 3, 2}, 0}};
  for (DType t : kFloats)
    for (const auto &[dims, axis] : cases)
      for (Kernel k : {Kernel::SoftmaxGrad, Kernel::LogSoftmaxGrad}) {
        KernelCase c(k);
        c.in(uniform(t, dims, 4, -2, 0)).in(uniform(t, dims, 5)).out(t, dims);
        c.ints = {axis};
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaGradient, LayerNormGradient) {
  struct Case {
    Dims x;
    int64_t axis;
  };
  for (DType t : kFloats)
    for (const Case &k : {Case{{6, 7}, 1}, Case{{2, 3, 40}, 2}, Case{{3, 4, 5}, 1},
                          Case{{300, 9}, 1}, Case{{2, 1030}, 1}}) {
      Dims stats = k.x, block(k.x.begin() + k.axis, k.x.end());
      for (size_t d = static_cast<size_t>(k.axis); d < stats.size(); ++d)
        stats[d] = 1;
      const DType statType = t == DType::F64 ? DType::F64 : DType::F32;
      KernelCase c(Kernel::LayerNormGrad);
      c.in(uniform(t, k.x, 1))
          .in(uniform(t, block, 2, 0.5, 1.5))
          .in(uniform(statType, stats, 3, -0.5, 0.5))
          .in(uniform(statType, stats, 4, 0.5, 2))
          .in(uniform(t, k.x, 5))
          .out(t, k.x)
          .out(t, block)
          .out(t, block);
      c.ints = {k.axis};
      expectSameAsCpu(c, Match::Bits);
    }
}

TEST(CudaGradient, GatherGradientAddsRepeatedIndicesInOrder) {
  for (DType t : kFloats)
    for (DType it : {DType::I32, DType::I64}) {
      // Embedding-like: ddata [10, 33], indices [2, 6] with repeats and negatives.
      TestTensor idx = values(it, {2, 6}, {1, 3, 1, -1, 0, 9, 3, 3, 3, -10, 5, 1});
      KernelCase c(Kernel::GatherGrad);
      c.in(idx).in(uniform(t, {2, 6, 33}, 6)).out(t, {10, 33});
      c.ints = {0};
      expectSameAsCpu(c, Match::Bits);
      // A middle axis.
      KernelCase mid(Kernel::GatherGrad);
      mid.in(values(it, {3}, {2, 0, 2})).in(uniform(t, {4, 3, 5}, 7)).out(t, {4, 3, 5});
      mid.ints = {1};
      expectSameAsCpu(mid, Match::Bits);
    }
  KernelCase bad(Kernel::GatherGrad);
  bad.in(values(DType::I64, {3}, {1, 10, 2})).in(uniform(DType::F32, {3, 4}, 8)).out(
      DType::F32, {10, 4});
  bad.ints = {0};
  expectSameAsCpu(bad, Match::Bits);
}

TEST(CudaGradient, SliceGradientWritesTheSlicedPositions) {
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::Bool}) {
    KernelCase c(Kernel::SliceGrad);
    c.in(uniform(t, {2, 3, 4}, 9)).out(t, {5, 7, 9});
    c.ints = {1, 6, 0, 2, -2, 2}; // starts ++ steps
    expectSameAsCpu(c, Match::Bits);
  }
  KernelCase outside(Kernel::SliceGrad);
  outside.in(uniform(DType::F32, {4}, 1)).out(DType::F32, {5});
  outside.ints = {3, 1};
  expectSameAsCpu(outside, Match::Bits);
}

TEST(CudaGradient, ReduceMaxGradientSharesAmongTies) {
  for (DType t : kFloats) {
    TestTensor x = values(t, {2, 4}, {1, 3, 3, 2, 5, 1, 5, 5});
    KernelCase rows(Kernel::ReduceMaxGrad);
    rows.in(x).in(values(t, {2, 1}, {3, 5})).in(values(t, {2, 1}, {1, 0.75})).out(t, {2, 4});
    rows.ints = {1};
    expectSameAsCpu(rows, Match::Bits);
    KernelCase cols(Kernel::ReduceMaxGrad);
    cols.in(x).in(values(t, {1, 4}, {5, 3, 5, 5})).in(values(t, {1, 4}, {1, 2, 3, 4})).out(
        t, {2, 4});
    cols.ints = {0};
    expectSameAsCpu(cols, Match::Bits);
  }
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
