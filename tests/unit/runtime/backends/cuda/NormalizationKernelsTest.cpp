//===- NormalizationKernelsTest.cpp - CUDA softmax/layer norm vs CPU -------===//
//
// The CUDA normalization kernels (NormalizationKernels.cu) under SIMT
// emulation against the CPU's: softmax over the last and over middle axes
// (the 16-lane row folds and the column walks), log-softmax, layer norm
// over one and several trailing dims with broadcast scale and bias and
// 16-bit statistics, rows of 1, 7, 33 and 1000+ elements, and many rows
// (several segments per block, several rounds). Bit for bit, but for
// log-softmax's log of the row sum (each machine's library).
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

TEST(CudaNormalization, SoftmaxOverEveryAxisAndLength) {
  const std::vector<std::pair<Dims, int64_t>> cases = {
      {{4, 7}, 1}, {{3, 1}, 1}, {{5, 33}, 1}, {{2, 1030}, 1}, {{700, 9}, 1},
      {{4, 6, 5}, 1}, {{3, 4, 5}, 0}, {{2, 3, 300}, 1}};
  for (DType t : kFloats)
    for (const auto &[dims, axis] : cases)
      for (bool log : {false, true}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " axis " + std::to_string(axis) +
                     (log ? " log" : ""));
        KernelCase c(log ? Kernel::LogSoftmax : Kernel::Softmax);
        c.in(uniform(t, dims, 1, -8, 8)).out(t, dims);
        c.ints = {axis};
        if (log)
          expectSameAsCpu(c, Match::Close, t == DType::F64 ? 1e-15 : 1e-6);
        else
          expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaNormalization, LayerNormRowsScalesAndStatistics) {
  struct Case {
    Dims x, scale;
    int64_t axis;
  };
  const Case cases[] = {{{6, 7}, {7}, 1},        {{2, 3, 33}, {33}, 2},    {{4, 1030}, {1030}, 1},
                        {{3, 4, 5}, {4, 5}, 1}, {{3, 4, 5}, {1, 5}, 1},  {{600, 8}, {8}, 1},
                        {{5, 1}, {1}, 1}};
  for (DType t : kFloats)
    for (const Case &k : cases)
      for (bool withBias : {false, true}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + (withBias ? " bias" : ""));
        Dims stats = k.x;
        for (size_t d = static_cast<size_t>(k.axis); d < stats.size(); ++d)
          stats[d] = 1;
        KernelCase c(Kernel::LayerNorm);
        c.in(uniform(t, k.x, 1, -3, 3)).in(uniform(t, k.scale, 2, 0.5, 1.5));
        withBias ? (void)c.in(uniform(t, k.scale, 3, -1, 1)) : (void)c.absent();
        const DType statType = t == DType::F64 ? DType::F64 : DType::F32;
        c.out(t, k.x).out(statType, stats).out(statType, stats);
        c.ints = {k.axis};
        c.floats = {1e-5f};
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaNormalization, RefusalsAgree) {
  KernelCase badAxis(Kernel::Softmax);
  badAxis.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F32, {2, 3});
  badAxis.ints = {2};
  expectSameAsCpu(badAxis, Match::Bits);
  KernelCase ints(Kernel::Softmax);
  ints.in(uniform(DType::I32, {2, 3}, 1)).out(DType::I32, {2, 3});
  ints.ints = {1};
  expectSameAsCpu(ints, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
