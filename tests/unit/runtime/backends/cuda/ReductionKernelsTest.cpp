//===- ReductionKernelsTest.cpp - CUDA reduce vs CPU -----------------------===//
//
// The CUDA reduce kernels (ReductionKernels.cu) under SIMT emulation against
// the CPU's: sum, max and mean over trailing axes (the segment-per-output
// runs, pieces of 1024 past one piece), leading and middle axes (the
// thread-per-output columns, past one flush of 64 terms), all axes, every
// numeric dtype (integers wrap; integer means truncate), NaN in max, empty
// reductions, runs of 1, 33, 1024, 1025 and several pieces, thousands of
// outputs (several blocks), size-1 dims, no axes at all, and the
// refusals. Bit for bit.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

struct Case {
  Dims in;
  std::vector<int64_t> axes;
  Dims out;
};

const Case kCases[] = {
    {{4, 7}, {1}, {4}},           {{3, 2500}, {1}, {3}},         {{5, 6, 7}, {1, 2}, {5}},
    {{5, 6, 7}, {0}, {6, 7}},     {{130, 9}, {0}, {9}},          {{5, 6, 7}, {1}, {5, 7}},
    {{2, 3, 4}, {0, 1, 2}, {}},   {{4, 0, 3}, {1}, {4, 3}},      {{600, 40}, {1}, {600}},
    {{3, 5, 2, 4}, {0, 2}, {5, 4}},
};

TEST(CudaReduction, EveryKindDTypeAndAxisSet) {
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16,
                         DType::I32, DType::I64, DType::U8,  DType::I8};
  for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMax, Kernel::ReduceMean})
    for (DType t : types)
      for (const Case &k : kCases) {
        SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t));
        KernelCase c(kind);
        c.in(uniform(t, k.in, 1, -50, 50)).out(t, k.out);
        c.ints = k.axes;
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaReduction, NarrowAndWideIntegers) {
  const Case cases[] = {{{3, 1500}, {1}, {3}}, {{70, 300}, {0}, {300}}, {{4, 5, 6}, {0, 2}, {5}}};
  for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMax, Kernel::ReduceMean})
    for (DType t : {DType::I16, DType::U16, DType::U32, DType::U64})
      for (const Case &k : cases) {
        SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t));
        KernelCase c(kind);
        c.in(uniform(t, k.in, 3, 0, 30000)).out(t, k.out);
        c.ints = k.axes;
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaReduction, ManyOutputsAndLongRuns) {
  // Several blocks of outputs (segments and threads), runs of several
  // pieces with a partial last one, more kept columns than the CPU's
  // 256-column chunk, size-1 dims that coalesce away, runs of length 1, and
  // outputs of 16 pieces or more (the block-per-output kernel).
  const Case cases[] = {
      {{1, 4099}, {1}, {1}},        {{2100, 3}, {1}, {2100}},    {{3, 300, 7}, {0, 2}, {300}},
      {{65, 1030}, {0}, {1030}},     {{2, 1, 5, 1}, {1, 3}, {2, 5}}, {{7, 1}, {1}, {7}},
      {{1, 1, 1}, {0, 1, 2}, {}},    {{9, 2, 140}, {0, 1}, {140}},
      // 16 pieces or more an output: a block per output, pieces in rounds
      // of 16 with a partial last round and a partial last piece.
      {{40000}, {0}, {}},            {{3, 17, 1030}, {1, 2}, {3}}, {{2, 16 * 1024}, {1}, {2}}};
  for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMax, Kernel::ReduceMean})
    for (DType t : {DType::F32, DType::F64, DType::BF16, DType::I32})
      for (const Case &k : cases) {
        SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t));
        KernelCase c(kind);
        c.in(uniform(t, k.in, 4, -50, 50)).out(t, k.out);
        c.ints = k.axes;
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaReduction, EmptyReductionsGiveTheIdentity) {
  for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMax, Kernel::ReduceMean})
    for (DType t : {DType::F32, DType::F16, DType::I64})
      for (const Case &k : {Case{{0, 5}, {0}, {5}}, Case{{5, 0}, {1}, {5}},
                            Case{{0, 5}, {1}, {0}}}) {
        SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t));
        KernelCase c(kind);
        c.in(TestTensor(t, k.in)).out(t, k.out);
        c.ints = k.axes;
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaReduction, MaxKeepsNaN) {
  TestTensor x = uniform(DType::F32, {3, 40}, 2);
  x.set(45, NAN);
  KernelCase rows(Kernel::ReduceMax);
  rows.in(x).out(DType::F32, {3});
  rows.ints = {1};
  expectSameAsCpu(rows, Match::Bits);
  KernelCase columns(Kernel::ReduceMax);
  columns.in(x).out(DType::F32, {40});
  columns.ints = {0};
  expectSameAsCpu(columns, Match::Bits);
}

TEST(CudaReduction, RefusalsAgree) {
  KernelCase unsorted(Kernel::ReduceSum);
  unsorted.in(uniform(DType::F32, {2, 3, 4}, 1)).out(DType::F32, {3});
  unsorted.ints = {2, 0};
  expectSameAsCpu(unsorted, Match::Bits);
  KernelCase emptyMean(Kernel::ReduceMean);
  emptyMean.in(TestTensor(DType::I32, {3, 0})).out(DType::I32, {3});
  emptyMean.ints = {1};
  expectSameAsCpu(emptyMean, Match::Bits);
  KernelCase outside(Kernel::ReduceSum);
  outside.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F32, {2});
  outside.ints = {2};
  expectSameAsCpu(outside, Match::Bits);
  KernelCase wrongShape(Kernel::ReduceMax);
  wrongShape.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F32, {3});
  wrongShape.ints = {1};
  expectSameAsCpu(wrongShape, Match::Bits);
  KernelCase wrongType(Kernel::ReduceMean);
  wrongType.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F64, {2});
  wrongType.ints = {1};
  expectSameAsCpu(wrongType, Match::Bits);
  // Bools are not summed, even when nothing would be.
  for (const Dims &dims : {Dims{2, 3}, Dims{0, 3}}) {
    KernelCase bools(Kernel::ReduceSum);
    bools.in(TestTensor(DType::Bool, dims)).out(DType::Bool, {dims[0]});
    bools.ints = {1};
    expectSameAsCpu(bools, Match::Bits);
  }
}

TEST(CudaReduction, OddLengthsPiecesAndManyOutputs) {
  // Runs of 1, 33, exactly one piece, one past it and several pieces;
  // strided runs (a middle and the last axis reduced); columns past one
  // block of threads and past one flush; size-1 dims everywhere; no axes.
  const Case cases[] = {
      {{6, 1}, {1}, {6}},
      {{5, 33}, {1}, {5}},
      {{2, 1024}, {1}, {2}},
      {{2, 1025}, {1}, {2}},
      {{1, 4100}, {1}, {1}},
      {{3000, 5}, {1}, {3000}},
      {{3, 5, 2, 4}, {1, 3}, {3, 2}},
      {{129, 1030}, {0}, {1030}},
      {{1, 1}, {1}, {1}},
      {{1, 7, 1}, {0, 2}, {7}},
      {{4, 1, 6}, {1}, {4, 6}},
      {{3, 4}, {}, {3, 4}},
      {{1000}, {0}, {}},
      {{7, 2, 65}, {0, 1}, {65}},
      {{0}, {0}, {}},
      {{0, 5}, {1}, {0}},
  };
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I64, DType::U8};
  for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMax, Kernel::ReduceMean})
    for (DType t : types)
      for (const Case &k : cases) {
        SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t) + " " +
                     std::to_string(k.in.size()) + "-d");
        KernelCase c(kind);
        c.in(uniform(t, k.in, 11, -100, 100)).out(t, k.out);
        c.ints = k.axes;
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaReduction, IntegerSumsWrapAndMeansTruncate) {
  // Large values whose sums overflow every integer width, and negative
  // means that truncate toward zero.
  for (DType t : {DType::I8, DType::U8, DType::I32, DType::I64})
    for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMean}) {
      TestTensor x(t, {3, 70});
      for (int64_t i = 0; i < x.size(); ++i)
        x.set(i, t == DType::U8 ? 200 + i % 50 : (i % 2 ? 1 : -1) * (100 + i % 27));
      if (t == DType::I32)
        for (int64_t i = 0; i < x.size(); ++i)
          x.set(i, (i % 3 ? 1 : -1) * 2.1e9);
      if (t == DType::I64)
        for (int64_t i = 0; i < x.size(); ++i)
          x.set(i, (i % 3 ? 1 : -1) * 9.0e18);
      for (int64_t axis : {0, 1}) {
        KernelCase c(kind);
        c.in(x).out(t, axis == 0 ? Dims{70} : Dims{3});
        c.ints = {axis};
        expectSameAsCpu(c, Match::Bits);
      }
    }
}

TEST(CudaReduction, MoreRefusalsAgree) {
  auto reduceCase = [](Kernel kind, DType in, DType out, Dims outDims, std::vector<int64_t> axes) {
    KernelCase c(kind);
    c.in(uniform(in, {2, 3, 4}, 1)).out(out, std::move(outDims));
    c.ints = std::move(axes);
    return c;
  };
  expectSameAsCpu(reduceCase(Kernel::ReduceSum, DType::F32, DType::F16, {2, 3}, {2}), Match::Bits);
  expectSameAsCpu(reduceCase(Kernel::ReduceMax, DType::F32, DType::F32, {2, 4}, {2}), Match::Bits);
  expectSameAsCpu(reduceCase(Kernel::ReduceMean, DType::F32, DType::F32, {2}, {1, 1}), Match::Bits);
  expectSameAsCpu(reduceCase(Kernel::ReduceSum, DType::F32, DType::F32, {2, 3}, {3}), Match::Bits);
  expectSameAsCpu(reduceCase(Kernel::ReduceSum, DType::F32, DType::F32, {2, 3}, {-1}), Match::Bits);
  expectSameAsCpu(reduceCase(Kernel::ReduceSum, DType::Bool, DType::Bool, {2, 3}, {2}),
                  Match::Bits);
}

// More outputs than the largest grid has 16-thread segments (8192 blocks
// of 16): the segment loop's second round, with idle segments beside
// working ones in its last warps.
TEST(CudaReduction, MoreOutputsThanTheGridHasSegments) {
  const int64_t outputs = 8192 * 16 + 37;
  for (Kernel kind : {Kernel::ReduceSum, Kernel::ReduceMax}) {
    KernelCase c(kind);
    c.in(uniform(DType::F32, {outputs, 3}, 32, -5, 5)).out(DType::F32, {outputs});
    c.ints = {1};
    expectSameAsCpu(c, Match::Bits);
  }
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
