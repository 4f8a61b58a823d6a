//===- NormalizationKernelsTest.cpp - CUDA softmax/layer norm vs CPU -------===//
//
// The CUDA normalization kernels (NormalizationKernels.cu) under SIMT
// emulation against the CPU's: softmax over the last and over middle axes
// (the 16-lane row folds and the column walks), log-softmax, layer norm
// over one and several trailing dims with broadcast scale and bias and
// 16-bit statistics, rows of 1, 7, 33 and 1000+ elements, and many rows
// (several segments per block, several blocks), rank 1, infinities and
// NaN, empty tensors, statistics of another type than the input, and the
// refusals. Bit for bit, but for log-softmax's log of the row sum (each
// machine's library: within an ulp of the result type, see
// logSoftmaxTolerance).
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

/// Log-softmax takes the log of the row sum from each machine's library
/// (within an ulp of the compute type), and a 16-bit result may round that
/// ulp into one of its own.
double logSoftmaxTolerance(DType t) {
  switch (t) {
  case DType::F64:
    return 1e-15;
  case DType::F16:
    return 1e-3; // 2^-10
  case DType::BF16:
    return 8e-3; // 2^-7
  default:
    return 1e-6;
  }
}

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
          expectSameAsCpu(c, Match::Close, logSoftmaxTolerance(t));
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

TEST(CudaNormalization, SoftmaxEdgeShapesAndSpecialValues) {
  // Rank 1, rows of one element, a middle axis past one block of columns,
  // the first axis of odd length, many short rows (several blocks).
  const std::vector<std::pair<Dims, int64_t>> cases = {
      {{1}, 0},         {{7}, 0},     {{1000}, 0},    {{300, 1}, 1},
      {{2, 7, 300}, 1}, {{33, 7}, 0}, {{2000, 3}, 1}, {{1, 1, 1}, 2}};
  for (DType t : kFloats)
    for (const auto &[dims, axis] : cases) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " axis " + std::to_string(axis));
      KernelCase c(Kernel::Softmax);
      c.in(uniform(t, dims, 5, -20, 20)).out(t, dims);
      c.ints = {axis};
      expectSameAsCpu(c, Match::Bits);
    }
  // Infinities and NaN in a row and in a column: the same max rule
  // (std::max drops a NaN in the second operand) and the same NaNs out.
  for (DType t : kFloats)
    for (int64_t axis : {0, 1}) {
      TestTensor x = uniform(t, {5, 40}, 6);
      x.set(3, INFINITY);
      x.set(45, -INFINITY);
      x.set(88, NAN);
      x.set(120, NAN);
      for (int64_t i = 160; i < 200; ++i)
        x.set(i, -INFINITY); // a whole row of -inf
      KernelCase c(Kernel::Softmax);
      c.in(x).out(t, {5, 40});
      c.ints = {axis};
      expectSameAsCpu(c, Match::Bits);
    }
}

TEST(CudaNormalization, EmptyTensorsOfRefusedTypes) {
  for (Dims dims : {Dims{0, 5}, Dims{3, 0}, Dims{2, 0, 4}}) {
    KernelCase s(Kernel::Softmax);
    s.in(TestTensor(DType::F32, dims)).out(DType::F32, dims);
    s.ints = {1};
    expectSameAsCpu(s, Match::Bits);
  }
  KernelCase ln(Kernel::LayerNorm);
  ln.in(TestTensor(DType::F32, {0, 8}))
      .in(uniform(DType::F32, {8}, 1))
      .absent()
      .out(DType::F32, {0, 8})
      .out(DType::F32, {0, 1})
      .out(DType::F32, {0, 1});
  ln.ints = {1};
  ln.floats = {1e-5f};
  expectSameAsCpu(ln, Match::Bits);
  // Rows of no elements: the statistics are 0/0 (NaN) on both.
  KernelCase emptyRows(Kernel::LayerNorm);
  emptyRows.in(TestTensor(DType::F32, {3, 0}))
      .in(TestTensor(DType::F32, {0}))
      .absent()
      .out(DType::F32, {3, 0})
      .out(DType::F32, {3, 1})
      .out(DType::F32, {3, 1});
  emptyRows.ints = {1};
  emptyRows.floats = {1e-5f};
  expectSameAsCpu(emptyRows, Match::Bits);
}

TEST(CudaNormalization, LayerNormStatisticTypesAndBroadcasts) {
  // Statistics stored in another type than the input (ONNX stash_type),
  // a scalar-like scale, a scale broadcast over the leading normalized dim,
  // a large epsilon, and many rows over several blocks.
  struct Case {
    DType x, stat;
    Dims shape, scale;
    int64_t axis;
    float epsilon;
  };
  const Case cases[] = {
      {DType::F16, DType::F16, {9, 33}, {33}, 1, 1e-5f},
      {DType::BF16, DType::BF16, {4, 3, 7}, {3, 7}, 1, 1e-5f},
      {DType::F16, DType::F64, {5, 20}, {20}, 1, 1e-3f},
      {DType::F32, DType::F64, {4, 33}, {1}, 1, 1e-5f},
      {DType::F64, DType::F32, {3, 4, 9}, {4, 1}, 1, 0.5f},
      {DType::F32, DType::BF16, {1500, 4}, {4}, 1, 1e-5f},
      {DType::F32, DType::F32, {2, 3, 4, 5}, {3, 4, 5}, 1, 1e-5f},
      {DType::F32, DType::F32, {2, 3, 4, 5}, {2, 3, 4, 5}, 0, 1e-5f},
  };
  for (const Case &k : cases)
    for (bool withBias : {false, true}) {
      SCOPED_TRACE(std::string(dtypeName(k.x)) + "/" + dtypeName(k.stat) +
                   (withBias ? " bias" : ""));
      Dims stats = k.shape;
      for (size_t d = static_cast<size_t>(k.axis); d < stats.size(); ++d)
        stats[d] = 1;
      KernelCase c(Kernel::LayerNorm);
      c.in(uniform(k.x, k.shape, 7, -4, 4)).in(uniform(k.x, k.scale, 8, 0.5, 1.5));
      withBias ? (void)c.in(uniform(k.x, k.scale, 9, -1, 1)) : (void)c.absent();
      c.out(k.x, k.shape).out(k.stat, stats).out(k.stat, stats);
      c.ints = {k.axis};
      c.floats = {k.epsilon};
      expectSameAsCpu(c, Match::Bits);
    }
}

TEST(CudaNormalization, MoreRefusalsAgree) {
  KernelCase negativeAxis(Kernel::LogSoftmax);
  negativeAxis.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F32, {2, 3});
  negativeAxis.ints = {-1};
  expectSameAsCpu(negativeAxis, Match::Bits);
  KernelCase mixed(Kernel::Softmax);
  mixed.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F16, {2, 3});
  mixed.ints = {1};
  expectSameAsCpu(mixed, Match::Bits);

  auto layerNorm = [](DType x, DType scale, DType mean, DType inv, int64_t axis) {
    KernelCase c(Kernel::LayerNorm);
    c.in(uniform(x, {3, 4}, 1)).in(uniform(scale, {4}, 2)).absent();
    c.out(x, {3, 4}).out(mean, {3, 1}).out(inv, {3, 1});
    c.ints = {axis};
    c.floats = {1e-5f};
    return c;
  };
  expectSameAsCpu(layerNorm(DType::F32, DType::F16, DType::F32, DType::F32, 1), Match::Bits);
  expectSameAsCpu(layerNorm(DType::F32, DType::F32, DType::F32, DType::F64, 1), Match::Bits);
  expectSameAsCpu(layerNorm(DType::F32, DType::F32, DType::F32, DType::F32, 2), Match::Bits);
  expectSameAsCpu(layerNorm(DType::I32, DType::I32, DType::F32, DType::F32, 1), Match::Bits);
  expectSameAsCpu(layerNorm(DType::F32, DType::F32, DType::I32, DType::I32, 1), Match::Bits);
}

// More rows than the largest grid has 16-thread segments (8192 blocks of
// 16 segments): the segment loop's second round, and the grid-stride
// loop's second pass for the columns.
TEST(CudaNormalization, MoreRowsThanTheGridHasSegments) {
  const int64_t rows = 8192 * 16 + 37;
  KernelCase s(Kernel::Softmax);
  s.in(uniform(DType::F32, {rows, 3}, 31, -5, 5)).out(DType::F32, {rows, 3});
  s.ints = {1};
  expectSameAsCpu(s, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
