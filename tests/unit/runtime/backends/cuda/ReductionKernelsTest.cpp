//===- ReductionKernelsTest.cpp - CUDA reduce vs CPU -----------------------===//
//
// The CUDA reduce kernels (ReductionKernels.cu) under SIMT emulation against
// the CPU's: sum, max and mean over trailing axes (the segment-per-output
// runs, pieces of 1024 past one piece), leading and middle axes (the
// thread-per-output columns, past one flush of 64 terms), all axes, every
// numeric dtype (integers wrap; integer means truncate), NaN in max, empty
// reductions, and the refusals. Bit for bit.
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
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
