//===- NormalizationKernelsTest.cpp - CUDA softmax/layer norm vs CPU -------===//
//
// The CUDA normalization kernels (NormalizationKernels.cu) under SIMT
// emulation against the CPU's: softmax over the last and over middle axes
// (the 16-lane row folds and the column walks), log-softmax, layer norm
// over one and several trailing dims with broadcast scale and bias and
// 16-bit and mixed-precision statistics, rows of 1, 7, 33 and 1000+
// elements, many rows (several segments per block, several rounds), more
// columns than the CPU's column chunk, -inf/NaN/huge scores, in-place
// runs, empty tensors, and the refusals (an empty tensor of a type the
// kernel does not take included). Bit for bit, but for log-softmax's log of
// the row sum (each machine's library).
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

TEST(CudaNormalization, SoftmaxWideColumnsExtremesAndInPlace) {
  // More columns than the CPU's 1024-column chunk, a length-1 axis in the
  // middle, and rows holding -inf, a huge score and a NaN.
  for (DType t : kFloats)
    for (bool log : {false, true}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + (log ? " log" : ""));
      const Kernel k = log ? Kernel::LogSoftmax : Kernel::Softmax;
      const double tol = t == DType::F64 ? 1e-15 : 1e-6;
      auto check = [&](const KernelCase &c) {
        log ? expectSameAsCpu(c, Match::Close, tol) : expectSameAsCpu(c, Match::Bits);
      };
      KernelCase wide(k);
      wide.in(uniform(t, {2, 3, 1100}, 4, -5, 5)).out(t, {2, 3, 1100});
      wide.ints = {1};
      check(wide);
      KernelCase single(k);
      single.in(uniform(t, {3, 1, 7}, 5)).out(t, {3, 1, 7});
      single.ints = {1};
      check(single);
      TestTensor x = uniform(t, {4, 9}, 6, -3, 3);
      x.set(0, -INFINITY);
      x.set(10, 60000);
      x.set(20, NAN);
      for (int64_t i = 27; i < 36; ++i)
        x.set(i, -INFINITY); // a row of -inf: NaN everywhere
      for (int64_t axis : {0, 1}) {
        KernelCase extremes(k);
        extremes.in(x).out(t, {4, 9});
        extremes.ints = {axis};
        check(extremes);
      }
      // In place (the plans reuse a dead input's buffer): the row folds
      // finish reading before any thread writes.
      for (int64_t axis : {0, 1}) {
        KernelCase inPlace(k);
        inPlace.in(uniform(t, {40, 33}, 7, -4, 4)).inPlace(0);
        inPlace.ints = {axis};
        check(inPlace);
      }
    }
}

TEST(CudaNormalization, EmptyTensors) {
  for (DType t : kFloats) {
    for (const auto &[dims, axis] : std::vector<std::pair<Dims, int64_t>>{
             {{0, 5}, 1}, {{3, 0}, 1}, {{2, 0, 4}, 1}, {{0, 3, 4}, 1}}) {
      KernelCase c(Kernel::Softmax);
      c.in(TestTensor(t, dims)).out(t, dims);
      c.ints = {axis};
      expectSameAsCpu(c, Match::Bits);
    }
    KernelCase noRows(Kernel::LayerNorm);
    noRows.in(TestTensor(t, {0, 7})).in(uniform(t, {7}, 1)).absent();
    noRows.out(t, {0, 7}).out(DType::F32, {0, 1}).out(DType::F32, {0, 1});
    noRows.ints = {1};
    noRows.floats = {1e-5f};
    expectSameAsCpu(noRows, Match::Bits);
  }
  // An empty tensor of a type the kernel does not take is still refused.
  KernelCase ints(Kernel::Softmax);
  ints.in(TestTensor(DType::I32, {0, 3})).out(DType::I32, {0, 3});
  ints.ints = {1};
  expectSameAsCpu(ints, Match::Bits);
  KernelCase intNorm(Kernel::LayerNorm);
  intNorm.in(TestTensor(DType::I32, {0, 3})).in(TestTensor(DType::I32, {3})).absent();
  intNorm.out(DType::I32, {0, 3}).out(DType::F32, {0, 1}).out(DType::F32, {0, 1});
  intNorm.ints = {1};
  intNorm.floats = {1e-5f};
  expectSameAsCpu(intNorm, Match::Bits);
}

TEST(CudaNormalization, LayerNormSixteenBitAndMixedStatistics) {
  // ONNX's stash_type: statistics stored in another float type than x.
  const std::pair<DType, DType> pairs[] = {{DType::F32, DType::F16},  {DType::F32, DType::BF16},
                                           {DType::F32, DType::F64},  {DType::BF16, DType::F32},
                                           {DType::F16, DType::F16},  {DType::F64, DType::F32}};
  for (const auto &[t, stat] : pairs) {
    SCOPED_TRACE(std::string(dtypeName(t)) + " stats " + dtypeName(stat));
    KernelCase c(Kernel::LayerNorm);
    c.in(uniform(t, {37, 65}, 1, -3, 3)).in(uniform(t, {65}, 2, 0.5, 1.5));
    c.in(uniform(t, {65}, 3, -1, 1));
    c.out(t, {37, 65}).out(stat, {37, 1}).out(stat, {37, 1});
    c.ints = {1};
    c.floats = {1e-3f};
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
  KernelCase wrongResult(Kernel::Softmax);
  wrongResult.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F16, {2, 3});
  wrongResult.ints = {1};
  expectSameAsCpu(wrongResult, Match::Bits);
  auto norm = [](DType x, DType scale, DType stat, DType inv, int64_t axis) {
    KernelCase c(Kernel::LayerNorm);
    c.in(uniform(x, {4, 6}, 1)).in(uniform(scale, {6}, 2)).absent();
    c.out(x, {4, 6}).out(stat, {4, 1}).out(inv, {4, 1});
    c.ints = {axis};
    c.floats = {1e-5f};
    return c;
  };
  expectSameAsCpu(norm(DType::F32, DType::F32, DType::F32, DType::F32, 2), Match::Bits);
  expectSameAsCpu(norm(DType::F32, DType::F32, DType::F32, DType::F32, -1), Match::Bits);
  expectSameAsCpu(norm(DType::F32, DType::F16, DType::F32, DType::F32, 1), Match::Bits);
  expectSameAsCpu(norm(DType::F32, DType::F32, DType::F32, DType::F64, 1), Match::Bits);
  expectSameAsCpu(norm(DType::F32, DType::F32, DType::I32, DType::I32, 1), Match::Bits);
  expectSameAsCpu(norm(DType::I64, DType::I64, DType::F32, DType::F32, 1), Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
