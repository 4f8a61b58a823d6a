//===- GradientKernelsTest.cpp - CUDA backward kernels vs CPU --------------===//
//
// The CUDA gradient kernels (GradientKernels.cu) under SIMT emulation
// against the CPU's: activation gradients, softmax and log-softmax
// gradients over the last and a middle axis, layer norm's dx/dscale/dbias,
// gather's adjoint with repeated and negative indices (and one out of
// range, refused by both, also when dy is empty), slice's adjoint with
// negative and larger steps, reduce max's adjoint with ties and NaN over
// several axis sets, dropout's; sizes of 0, 1, 7, 33 and 1000+, 16-bit
// statistics, and every refusal the CPU makes. Bit for bit (log-softmax's
// exp is the shared expOf).
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

TEST(CudaGradient, SoftmaxGradientLengthsAndWideColumns) {
  // Rows of 1 and 33, many rows (several blocks of segments), more columns
  // than the CPU's 1024-column chunk, in place over dy.
  const std::vector<std::pair<Dims, int64_t>> cases = {
      {{9, 1}, 1}, {{5, 33}, 1}, {{2100, 3}, 1}, {{2, 4, 1100}, 1}, {{3, 1, 6}, 1}};
  for (DType t : kFloats)
    for (Kernel k : {Kernel::SoftmaxGrad, Kernel::LogSoftmaxGrad}) {
      for (const auto &[dims, axis] : cases) {
        KernelCase c(k);
        c.in(uniform(t, dims, 4, -2, 0)).in(uniform(t, dims, 5)).out(t, dims);
        c.ints = {axis};
        expectSameAsCpu(c, Match::Bits);
      }
      for (int64_t axis : {0, 1}) {
        KernelCase inPlace(k);
        inPlace.in(uniform(t, {33, 40}, 6, -3, 0)).in(uniform(t, {33, 40}, 7)).inPlace(1);
        inPlace.ints = {axis};
        expectSameAsCpu(inPlace, Match::Bits);
      }
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

TEST(CudaGradient, LayerNormGradientStatisticsTypesAndEdges) {
  // Statistics stored in another float type; rows of one element; no rows
  // (dscale and dbias are zeros); many rows and a wide normalized block.
  struct Case {
    DType t, stat;
    Dims x;
    int64_t axis;
  };
  const Case cases[] = {{DType::F32, DType::F16, {7, 33}, 1},
                        {DType::F32, DType::BF16, {7, 33}, 1},
                        {DType::BF16, DType::F32, {5, 2, 9}, 1},
                        {DType::F64, DType::F32, {4, 7}, 1},
                        {DType::F32, DType::F32, {6, 1}, 1},
                        {DType::F16, DType::F16, {0, 7}, 1},
                        {DType::F32, DType::F32, {1500, 3}, 1},
                        {DType::F32, DType::F32, {3, 1100}, 1}};
  for (const Case &k : cases) {
    SCOPED_TRACE(std::string(dtypeName(k.t)) + " stats " + dtypeName(k.stat));
    Dims stats = k.x, block(k.x.begin() + k.axis, k.x.end());
    for (size_t d = static_cast<size_t>(k.axis); d < stats.size(); ++d)
      stats[d] = 1;
    KernelCase c(Kernel::LayerNormGrad);
    c.in(uniform(k.t, k.x, 1))
        .in(uniform(k.t, block, 2, 0.5, 1.5))
        .in(uniform(k.stat, stats, 3, -0.5, 0.5))
        .in(uniform(k.stat, stats, 4, 0.5, 2))
        .in(uniform(k.t, k.x, 5))
        .out(k.t, k.x)
        .out(k.t, block)
        .out(k.t, block);
    c.ints = {k.axis};
    expectSameAsCpu(c, Match::Bits);
  }
}

TEST(CudaGradient, GatherGradientManyRowsAndColumns) {
  // A vocabulary-sized table: many columns (several blocks of threads), a
  // long index list with every row hit several times, and inner = 1.
  std::vector<double> ids(600);
  for (size_t i = 0; i < ids.size(); ++i)
    ids[i] = static_cast<double>((i * 37) % 50) - (i % 7 == 0 ? 50 : 0);
  for (DType t : {DType::F32, DType::BF16}) {
    KernelCase c(Kernel::GatherGrad);
    c.in(values(DType::I32, {600}, ids)).in(uniform(t, {600, 40}, 8)).out(t, {50, 40});
    c.ints = {0};
    expectSameAsCpu(c, Match::Bits);
    KernelCase last(Kernel::GatherGrad);
    last.in(values(DType::I64, {4}, {2, -1, 2, 0})).in(uniform(t, {300, 4}, 9)).out(t, {300, 3});
    last.ints = {-1};
    expectSameAsCpu(last, Match::Bits);
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
  KernelCase badNegative(Kernel::GatherGrad);
  badNegative.in(values(DType::I32, {2}, {-11, 2})).in(uniform(DType::F32, {2, 4}, 8));
  badNegative.out(DType::F32, {10, 4});
  badNegative.ints = {0};
  expectSameAsCpu(badNegative, Match::Bits);
  // Nothing to add (empty slices), yet an index out of range is refused.
  KernelCase badEmpty(Kernel::GatherGrad);
  badEmpty.in(values(DType::I64, {3}, {1, 20, 2})).in(TestTensor(DType::F32, {3, 0}));
  badEmpty.out(DType::F32, {10, 0});
  badEmpty.ints = {0};
  expectSameAsCpu(badEmpty, Match::Bits);
  KernelCase noIndices(Kernel::GatherGrad);
  noIndices.in(TestTensor(DType::I64, {0})).in(TestTensor(DType::F32, {0, 4}));
  noIndices.out(DType::F32, {10, 4});
  noIndices.ints = {0};
  expectSameAsCpu(noIndices, Match::Bits);
  KernelCase badAxis(Kernel::GatherGrad);
  badAxis.in(values(DType::I64, {1}, {0})).in(uniform(DType::F32, {1, 4}, 8));
  badAxis.out(DType::F32, {10, 4});
  badAxis.ints = {2};
  expectSameAsCpu(badAxis, Match::Bits);
  KernelCase badCount(Kernel::GatherGrad);
  badCount.in(values(DType::I64, {2}, {0, 1})).in(uniform(DType::F32, {3, 4}, 8));
  badCount.out(DType::F32, {10, 4});
  badCount.ints = {0};
  expectSameAsCpu(badCount, Match::Bits);
  KernelCase floatIndices(Kernel::GatherGrad);
  floatIndices.in(values(DType::F32, {1}, {0})).in(uniform(DType::F32, {1, 4}, 8));
  floatIndices.out(DType::F32, {10, 4});
  floatIndices.ints = {0};
  expectSameAsCpu(floatIndices, Match::Bits);
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
  KernelCase empty(Kernel::SliceGrad);
  empty.in(TestTensor(DType::F32, {0, 3})).out(DType::F32, {4, 5});
  empty.ints = {9, 0, 1, 1};
  expectSameAsCpu(empty, Match::Bits);
  KernelCase large(Kernel::SliceGrad);
  large.in(uniform(DType::BF16, {300, 20}, 2)).out(DType::BF16, {601, 41});
  large.ints = {600, 1, -2, 2};
  expectSameAsCpu(large, Match::Bits);
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
  // Many outputs, several reduced axes, and a NaN max (no tie: NaN shares).
  for (DType t : {DType::F32, DType::BF16}) {
    TestTensor x(t, {30, 4, 50});
    for (int64_t i = 0; i < x.size(); ++i)
      x.set(i, static_cast<double>((i * 7) % 5));
    x.set(3, NAN);
    TestTensor y(t, {30, 1, 1});
    for (int64_t i = 0; i < y.size(); ++i)
      y.set(i, 4);
    y.set(0, NAN);
    KernelCase c(Kernel::ReduceMaxGrad);
    c.in(x).in(y).in(uniform(t, {30, 1, 1}, 3)).out(t, {30, 4, 50});
    c.ints = {1, 2};
    expectSameAsCpu(c, Match::Bits);
    TestTensor y2(t, {1, 4, 50});
    for (int64_t i = 0; i < y2.size(); ++i)
      y2.set(i, 4);
    KernelCase lead(Kernel::ReduceMaxGrad);
    lead.in(x).in(y2).in(uniform(t, {1, 4, 50}, 4)).out(t, {30, 4, 50});
    lead.ints = {0};
    expectSameAsCpu(lead, Match::Bits);
  }
}

TEST(CudaGradient, EmptyTensorsAndRefusalsAgree) {
  for (Kernel k : {Kernel::SoftmaxGrad, Kernel::LogSoftmaxGrad})
    for (DType t : {DType::F32, DType::I32}) {
      KernelCase c(k);
      c.in(TestTensor(t, {0, 4})).in(TestTensor(t, {0, 4})).out(t, {0, 4});
      c.ints = {1};
      expectSameAsCpu(c, Match::Bits);
      KernelCase axis(k);
      axis.in(uniform(DType::F32, {2, 4}, 1)).in(uniform(DType::F32, {2, 4}, 2));
      axis.out(DType::F32, {2, 4});
      axis.ints = {2};
      expectSameAsCpu(axis, Match::Bits);
    }
  KernelCase mismatched(Kernel::SoftmaxGrad);
  mismatched.in(uniform(DType::F32, {2, 4}, 1)).in(uniform(DType::F32, {2, 5}, 2));
  mismatched.out(DType::F32, {2, 4});
  mismatched.ints = {1};
  expectSameAsCpu(mismatched, Match::Bits);
  for (Kernel k : {Kernel::ReluGrad, Kernel::SigmoidGrad}) {
    expectSameAsCpu(KernelCase(k).in(TestTensor(DType::F32, {0})).in(TestTensor(DType::F32, {0}))
                        .out(DType::F32, {0}),
                    Match::Bits);
    expectSameAsCpu(KernelCase(k).in(uniform(DType::I32, {5}, 1)).in(uniform(DType::I32, {5}, 2))
                        .out(DType::I32, {5}),
                    Match::Bits);
    expectSameAsCpu(KernelCase(k).in(uniform(DType::F32, {5}, 1)).in(uniform(DType::F16, {5}, 2))
                        .out(DType::F32, {5}),
                    Match::Bits);
  }
  auto dropout = [](DType maskType, float ratio) {
    KernelCase d(Kernel::DropoutGrad);
    d.in(uniform(DType::F32, {6}, 3)).in(TestTensor(maskType, {6})).out(DType::F32, {6});
    d.floats = {ratio};
    return d;
  };
  expectSameAsCpu(dropout(DType::U8, 0.5f), Match::Bits);
  expectSameAsCpu(dropout(DType::Bool, 1.0f), Match::Bits);
  expectSameAsCpu(dropout(DType::Bool, -0.1f), Match::Bits);
  expectSameAsCpu(dropout(DType::Bool, 0.0f), Match::Bits);
  auto layerNorm = [](Dims scaleDims, Dims statDims, int64_t axis) {
    KernelCase c(Kernel::LayerNormGrad);
    c.in(uniform(DType::F32, {4, 6}, 1))
        .in(uniform(DType::F32, scaleDims, 2))
        .in(uniform(DType::F32, statDims, 3))
        .in(uniform(DType::F32, statDims, 4))
        .in(uniform(DType::F32, {4, 6}, 5))
        .out(DType::F32, {4, 6})
        .out(DType::F32, scaleDims)
        .out(DType::F32, scaleDims);
    c.ints = {axis};
    return c;
  };
  expectSameAsCpu(layerNorm({6}, {4, 1}, 1), Match::Bits);
  expectSameAsCpu(layerNorm({5}, {4, 1}, 1), Match::Bits);
  expectSameAsCpu(layerNorm({6}, {3, 1}, 1), Match::Bits);
  expectSameAsCpu(layerNorm({6}, {4, 1}, 2), Match::Bits);
  KernelCase reduceAxes(Kernel::ReduceMaxGrad);
  reduceAxes.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F32, {2, 1}, 2));
  reduceAxes.in(uniform(DType::F32, {2, 1}, 3)).out(DType::F32, {2, 3});
  reduceAxes.ints = {3};
  expectSameAsCpu(reduceAxes, Match::Bits);
}

TEST(CudaGradient, ElementwiseGradientsOverOddSizesAndSpecialValues) {
  for (DType t : kFloats)
    for (int64_t n : {int64_t(1), int64_t(7), int64_t(33), int64_t(0)}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " n " + std::to_string(n));
      TestTensor saved = uniform(t, {n}, 12, -6, 6), dy = uniform(t, {n}, 13);
      if (n >= 7) { // relu's 0, infinities and NaN in both operands
        saved.set(0, 0);
        saved.set(1, INFINITY);
        saved.set(2, -INFINITY);
        saved.set(3, NAN);
        dy.set(4, NAN);
        dy.set(5, INFINITY);
      }
      for (Kernel k : {Kernel::ReluGrad, Kernel::ErfGrad, Kernel::TanhGrad, Kernel::SigmoidGrad})
        expectSameAsCpu(KernelCase(k).in(saved).in(dy).out(t, {n}), Match::Bits);
      TestTensor mask(DType::Bool, {n});
      for (int64_t i = 0; i < n; ++i)
        mask.set(i, i % 2);
      for (float ratio : {0.0f, 0.5f, 0.9f}) {
        KernelCase d(Kernel::DropoutGrad);
        d.in(dy).in(mask).out(t, {n});
        d.floats = {ratio};
        expectSameAsCpu(d, Match::Bits);
      }
    }
}

TEST(CudaGradient, ElementwiseGradientRefusalsAgree) {
  expectSameAsCpu(KernelCase(Kernel::TanhGrad)
                      .in(uniform(DType::F32, {5}, 1))
                      .in(uniform(DType::F16, {5}, 2))
                      .out(DType::F32, {5}),
                  Match::Bits);
  expectSameAsCpu(KernelCase(Kernel::ReluGrad)
                      .in(uniform(DType::F32, {5}, 1))
                      .in(uniform(DType::F32, {6}, 2))
                      .out(DType::F32, {6}),
                  Match::Bits);
  expectSameAsCpu(KernelCase(Kernel::SigmoidGrad)
                      .in(uniform(DType::I32, {5}, 1))
                      .in(uniform(DType::I32, {5}, 2))
                      .out(DType::I32, {5}),
                  Match::Bits);
  TestTensor mask(DType::Bool, {4});
  for (float ratio : {1.0f, -0.1f, NAN}) {
    KernelCase d(Kernel::DropoutGrad);
    d.in(uniform(DType::F32, {4}, 3)).in(mask).out(DType::F32, {4});
    d.floats = {ratio};
    expectSameAsCpu(d, Match::Bits);
  }
  KernelCase notBool(Kernel::DropoutGrad);
  notBool.in(uniform(DType::F32, {4}, 3)).in(TestTensor(DType::U8, {4})).out(DType::F32, {4});
  notBool.floats = {0.5f};
  expectSameAsCpu(notBool, Match::Bits);
  KernelCase shortMask(Kernel::DropoutGrad);
  shortMask.in(uniform(DType::F32, {4}, 3)).in(TestTensor(DType::Bool, {3})).out(DType::F32, {4});
  shortMask.floats = {0.5f};
  expectSameAsCpu(shortMask, Match::Bits);
}

TEST(CudaGradient, SoftmaxGradientEdgeShapes) {
  // Rows of 1 and 33, rank 1, a middle axis past one block of columns, the
  // first axis, many rows over several blocks, empty.
  const std::vector<std::pair<Dims, int64_t>> cases = {
      {{9, 1}, 1},  {{5, 33}, 1},   {{1000}, 0},    {{2, 9, 300}, 1},
      {{33, 4}, 0}, {{2500, 3}, 1}, {{3, 0, 4}, 1}, {{1, 1}, 0}};
  for (DType t : kFloats)
    for (const auto &[dims, axis] : cases)
      for (Kernel k : {Kernel::SoftmaxGrad, Kernel::LogSoftmaxGrad}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " axis " + std::to_string(axis));
        KernelCase c(k);
        c.in(uniform(t, dims, 14, -3, 0)).in(uniform(t, dims, 15)).out(t, dims);
        c.ints = {axis};
        expectSameAsCpu(c, Match::Bits);
      }
  KernelCase badAxis(Kernel::SoftmaxGrad);
  badAxis.in(uniform(DType::F32, {2, 3}, 1))
      .in(uniform(DType::F32, {2, 3}, 2))
      .out(DType::F32, {2, 3});
  badAxis.ints = {2};
  expectSameAsCpu(badAxis, Match::Bits);
  KernelCase mismatch(Kernel::LogSoftmaxGrad);
  mismatch.in(uniform(DType::F32, {2, 3}, 1))
      .in(uniform(DType::F64, {2, 3}, 2))
      .out(DType::F32, {2, 3});
  mismatch.ints = {1};
  expectSameAsCpu(mismatch, Match::Bits);
}

TEST(CudaGradient, LayerNormGradientEdgeShapesAndStatisticTypes) {
  struct Case {
    DType x, stat;
    Dims shape;
    int64_t axis;
  };
  const Case cases[] = {
      {DType::F32, DType::F32, {5, 1}, 1},    {DType::F32, DType::F32, {0, 8}, 1},
      {DType::F16, DType::F16, {7, 33}, 1},   {DType::BF16, DType::BF16, {3, 4, 9}, 1},
      {DType::F16, DType::F64, {4, 20}, 1},   {DType::F64, DType::F32, {6, 7}, 1},
      {DType::F32, DType::F32, {1500, 3}, 1}, {DType::F32, DType::F32, {2, 3, 4}, 0},
      {DType::F32, DType::F32, {3, 1300}, 1},
  };
  for (const Case &k : cases) {
    SCOPED_TRACE(std::string(dtypeName(k.x)) + "/" + dtypeName(k.stat));
    Dims stats = k.shape, block(k.shape.begin() + k.axis, k.shape.end());
    for (size_t d = static_cast<size_t>(k.axis); d < stats.size(); ++d)
      stats[d] = 1;
    KernelCase c(Kernel::LayerNormGrad);
    c.in(uniform(k.x, k.shape, 16))
        .in(uniform(k.x, block, 17, 0.5, 1.5))
        .in(uniform(k.stat, stats, 18, -0.5, 0.5))
        .in(uniform(k.stat, stats, 19, 0.5, 2))
        .in(uniform(k.x, k.shape, 20))
        .out(k.x, k.shape)
        .out(k.x, block)
        .out(k.x, block);
    c.ints = {k.axis};
    expectSameAsCpu(c, Match::Bits);
  }
}

TEST(CudaGradient, LayerNormGradientRefusalsAgree) {
  auto grad = [](Dims scale, Dims stats, DType statType, int64_t axis) {
    KernelCase c(Kernel::LayerNormGrad);
    c.in(uniform(DType::F32, {3, 4}, 1))
        .in(uniform(DType::F32, scale, 2))
        .in(uniform(statType, stats, 3))
        .in(uniform(DType::F32, stats, 4))
        .in(uniform(DType::F32, {3, 4}, 5))
        .out(DType::F32, {3, 4})
        .out(DType::F32, scale)
        .out(DType::F32, scale);
    c.ints = {axis};
    return c;
  };
  expectSameAsCpu(grad({5}, {3, 1}, DType::F32, 1), Match::Bits);  // scale of 5, not 4
  expectSameAsCpu(grad({4}, {2, 1}, DType::F32, 1), Match::Bits);  // 2 means for 3 rows
  expectSameAsCpu(grad({4}, {3, 1}, DType::F64, 1), Match::Bits);  // mean f64, inv f32
  expectSameAsCpu(grad({4}, {3, 1}, DType::F32, 2), Match::Bits);  // axis past the rank
  expectSameAsCpu(grad({4}, {3, 1}, DType::F32, -1), Match::Bits); // negative axis
}

TEST(CudaGradient, GatherGradientShapesAndRefusals) {
  for (DType t : kFloats)
    for (DType it : {DType::I32, DType::I64}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + dtypeName(it));
      // The last axis (inner 1), a negative axis, many columns (several
      // blocks), 300 adds into one row (16-bit rounding after every add).
      KernelCase last(Kernel::GatherGrad);
      last.in(values(it, {4}, {6, 0, -1, 6})).in(uniform(t, {5, 4}, 21)).out(t, {5, 7});
      last.ints = {-1};
      expectSameAsCpu(last, Match::Bits);
      TestTensor many(it, {300});
      for (int64_t j = 0; j < many.size(); ++j)
        many.set(j, j % 3 == 0 ? 2 : (j * 7) % 40);
      KernelCase wide(Kernel::GatherGrad);
      wide.in(many).in(uniform(t, {3, 300, 100}, 22)).out(t, {3, 40, 100});
      wide.ints = {1};
      expectSameAsCpu(wide, Match::Bits);
      // No indices: the result is all zeros.
      KernelCase none(Kernel::GatherGrad);
      none.in(TestTensor(it, {0})).in(TestTensor(t, {0, 5})).out(t, {6, 5});
      none.ints = {0};
      expectSameAsCpu(none, Match::Bits);
    }
  // An index out of range is refused even when there is nothing to add.
  KernelCase emptyColumns(Kernel::GatherGrad);
  emptyColumns.in(values(DType::I64, {2}, {0, 3}))
      .in(TestTensor(DType::F32, {2, 0}))
      .out(DType::F32, {3, 0});
  emptyColumns.ints = {0};
  expectSameAsCpu(emptyColumns, Match::Bits);
  KernelCase negative(Kernel::GatherGrad);
  negative.in(values(DType::I32, {2}, {0, -4}))
      .in(uniform(DType::F32, {2, 2}, 1))
      .out(DType::F32, {3, 2});
  negative.ints = {0};
  expectSameAsCpu(negative, Match::Bits);
  KernelCase floatIndices(Kernel::GatherGrad);
  floatIndices.in(values(DType::F32, {2}, {0, 1}))
      .in(uniform(DType::F32, {2, 2}, 1))
      .out(DType::F32, {3, 2});
  floatIndices.ints = {0};
  expectSameAsCpu(floatIndices, Match::Bits);
  KernelCase wrongDy(Kernel::GatherGrad);
  wrongDy.in(values(DType::I32, {2}, {0, 1}))
      .in(uniform(DType::F32, {3, 2}, 1))
      .out(DType::F32, {3, 2});
  wrongDy.ints = {0};
  expectSameAsCpu(wrongDy, Match::Bits);
  KernelCase badAxis(Kernel::GatherGrad);
  badAxis.in(values(DType::I32, {2}, {0, 1}))
      .in(uniform(DType::F32, {2, 2}, 1))
      .out(DType::F32, {3, 2});
  badAxis.ints = {2};
  expectSameAsCpu(badAxis, Match::Bits);
}

TEST(CudaGradient, SliceGradientStepsAndRefusals) {
  for (DType t : {DType::F64, DType::BF16, DType::I8}) {
    // Steps of 3, a full copy, many elements (several blocks), nothing.
    KernelCase stepped(Kernel::SliceGrad);
    stepped.in(uniform(t, {3, 33}, 23)).out(t, {7, 100});
    stepped.ints = {1, 2, 2, 3};
    expectSameAsCpu(stepped, Match::Bits);
    KernelCase whole(Kernel::SliceGrad);
    whole.in(uniform(t, {40, 50}, 24)).out(t, {40, 50});
    whole.ints = {0, 0, 1, 1};
    expectSameAsCpu(whole, Match::Bits);
    KernelCase empty(Kernel::SliceGrad);
    empty.in(TestTensor(t, {0, 3})).out(t, {4, 3});
    empty.ints = {0, 0, 1, 1};
    expectSameAsCpu(empty, Match::Bits);
  }
  KernelCase negativeStart(Kernel::SliceGrad);
  negativeStart.in(uniform(DType::F32, {2}, 1)).out(DType::F32, {5});
  negativeStart.ints = {-1, 1};
  expectSameAsCpu(negativeStart, Match::Bits);
  KernelCase pastStart(Kernel::SliceGrad);
  pastStart.in(uniform(DType::F32, {3}, 1)).out(DType::F32, {5});
  pastStart.ints = {1, -1};
  expectSameAsCpu(pastStart, Match::Bits);
  KernelCase wrongType(Kernel::SliceGrad);
  wrongType.in(uniform(DType::F32, {2}, 1)).out(DType::F64, {5});
  wrongType.ints = {0, 1};
  expectSameAsCpu(wrongType, Match::Bits);
}

TEST(CudaGradient, ReduceMaxGradientAxesTiesAndNaN) {
  // Random values with planted ties and a NaN, over several axis sets; y is
  // the CPU's own reduce_max of x, as a plan computes it.
  struct Case {
    Dims in;
    std::vector<int64_t> axes;
    Dims out;
  };
  const Case cases[] = {{{6, 33}, {1}, {6, 1}},      {{5, 6, 7}, {0, 2}, {1, 6, 1}},
                        {{3, 4, 5}, {1}, {3, 1, 5}}, {{2, 3, 4}, {0, 1, 2}, {1, 1, 1}},
                        {{300, 7}, {0}, {1, 7}},     {{4, 1}, {1}, {4, 1}}};
  for (DType t : kFloats)
    for (const Case &k : cases) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " " + std::to_string(k.in.size()) + "-d");
      TestTensor x(t, k.in);
      for (int64_t i = 0; i < x.size(); ++i)
        x.set(i, static_cast<double>((i * 37) % 11)); // ties on every max
      if (x.size() > 20)
        x.set(17, NAN);
      KernelCase reduceCase(Kernel::ReduceMax);
      reduceCase.in(x).out(t, k.out);
      reduceCase.ints = k.axes;
      LaunchedCase reduced(reduceCase, launchCpuKernel);
      ASSERT_TRUE(reduced.status.isOk()) << reduced.status.message();
      KernelCase c(Kernel::ReduceMaxGrad);
      c.in(x).in(reduced.outputs[0]).in(uniform(t, k.out, 25)).out(t, k.in);
      c.ints = k.axes;
      expectSameAsCpu(c, Match::Bits);
    }
  KernelCase unsorted(Kernel::ReduceMaxGrad);
  unsorted.in(uniform(DType::F32, {2, 3}, 1))
      .in(uniform(DType::F32, {1, 1}, 2))
      .in(uniform(DType::F32, {1, 1}, 3))
      .out(DType::F32, {2, 3});
  unsorted.ints = {1, 0};
  expectSameAsCpu(unsorted, Match::Bits);
  KernelCase wrongY(Kernel::ReduceMaxGrad);
  wrongY.in(uniform(DType::F32, {2, 3}, 1))
      .in(uniform(DType::F32, {3}, 2))
      .in(uniform(DType::F32, {3}, 3))
      .out(DType::F32, {2, 3});
  wrongY.ints = {1};
  expectSameAsCpu(wrongY, Match::Bits);
  KernelCase empty(Kernel::ReduceMaxGrad);
  empty.in(TestTensor(DType::F32, {0, 3}))
      .in(TestTensor(DType::F32, {0, 1}))
      .in(TestTensor(DType::F32, {0, 1}))
      .out(DType::F32, {0, 3});
  empty.ints = {1};
  expectSameAsCpu(empty, Match::Bits);
}

// More rows than the largest grid has 16-thread segments (8192 blocks of
// 16): the row kernels' second round of the segment loop.
TEST(CudaGradient, MoreRowsThanTheGridHasSegments) {
  const int64_t rows = 8192 * 16 + 37;
  KernelCase s(Kernel::SoftmaxGrad);
  s.in(uniform(DType::F32, {rows, 2}, 33, -2, 0))
      .in(uniform(DType::F32, {rows, 2}, 34))
      .out(DType::F32, {rows, 2});
  s.ints = {1};
  expectSameAsCpu(s, Match::Bits);
  KernelCase ln(Kernel::LayerNormGrad);
  ln.in(uniform(DType::F32, {rows, 2}, 35))
      .in(uniform(DType::F32, {2}, 36, 0.5, 1.5))
      .in(uniform(DType::F32, {rows, 1}, 37, -0.5, 0.5))
      .in(uniform(DType::F32, {rows, 1}, 38, 0.5, 2))
      .in(uniform(DType::F32, {rows, 2}, 39))
      .out(DType::F32, {rows, 2})
      .out(DType::F32, {2})
      .out(DType::F32, {2});
  ln.ints = {1};
  expectSameAsCpu(ln, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
