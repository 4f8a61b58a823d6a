//===- ReductionKernelsTest.cpp - CUDA reduce vs CPU -----------------------===//
//
// The CUDA reduce kernels (ReductionKernels.cu) under SIMT emulation against
// the CPU's: sum, max and mean over trailing axes (the segment-per-output
// runs, pieces of 1024 past one piece), leading and middle axes (the
// thread-per-output columns, past one flush of 64 terms), all axes, every
// numeric dtype (integers wrap; integer means truncate), many outputs and
// runs of several pieces, coalescing size-1 dims, NaN in max, empty inputs
// and empty reductions, and the refusals. Bit for bit.
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
  // 256-column chunk, size-1 dims that coalesce away, and runs of length 1.
  const Case cases[] = {
      {{1, 4099}, {1}, {1}},        {{2100, 3}, {1}, {2100}},    {{3, 300, 7}, {0, 2}, {300}},
      {{65, 1030}, {0}, {1030}},     {{2, 1, 5, 1}, {1, 3}, {2, 5}}, {{7, 1}, {1}, {7}},
      {{1, 1, 1}, {0, 1, 2}, {}},    {{9, 2, 140}, {0, 1}, {140}}};
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

} // namespace
} // namespace fsdp::rt::cuda::simttest
