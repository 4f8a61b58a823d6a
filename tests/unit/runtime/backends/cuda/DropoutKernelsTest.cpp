//===- DropoutKernelsTest.cpp - CUDA dropout vs CPU ------------------------===//
//
// The CUDA dropout kernel (DropoutKernels.cu) under SIMT emulation against
// the CPU's: masks and values bit for bit over seeds, steps (read from the
// device's step word), ratios and float dtypes, sizes spanning several
// blocks and the grid-stride loop (and 0, 1, 7, 33, 257), inference, and
// the refusals.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

KernelCase dropoutCase(DType t, Dims dims, float ratio, bool training, int64_t seed,
                       uint64_t step) {
  KernelCase c(Kernel::Dropout);
  c.in(uniform(t, dims, 7)).out(t, dims).out(DType::Bool, dims);
  c.ints = {training, seed};
  c.floats = {ratio};
  c.step = step;
  return c;
}

TEST(CudaDropout, MasksAndValuesAreTheCpusBits) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (float ratio : {0.1f, 0.5f, 0.9f})
      for (uint64_t step : {0ull, 1ull, 17ull})
        for (int64_t seed : {0, 12345})
          expectSameAsCpu(dropoutCase(t, {3, 1111}, ratio, true, seed, step), Match::Bits);
  // Past kMaxBlocks * 256 elements: every thread loops.
  expectSameAsCpu(dropoutCase(DType::F32, {2200000}, 0.25f, true, 3, 9), Match::Bits);
}

TEST(CudaDropout, OddSizesAndShapes) {
  for (DType t : {DType::F32, DType::F16})
    for (Dims dims : {Dims{0}, Dims{1}, Dims{7}, Dims{33}, Dims{257}, Dims{4, 0, 3}, Dims{5, 7, 9}})
      expectSameAsCpu(dropoutCase(t, dims, 0.3f, true, -7, 5), Match::Bits);
}

/// The same instruction at another step draws another mask: the kernel
/// reads the step word, not a value baked into the launch.
TEST(CudaDropout, StepChangesTheMask) {
  KernelCase a = dropoutCase(DType::F32, {4096}, 0.5f, true, 42, 1);
  KernelCase b = dropoutCase(DType::F32, {4096}, 0.5f, true, 42, 2);
  expectSameAsCpu(a, Match::Bits);
  expectSameAsCpu(b, Match::Bits);
  LaunchedCase ra(a, launchSimtKernel), rb(b, launchSimtKernel);
  ASSERT_TRUE(ra.status.isOk() && rb.status.isOk());
  EXPECT_NE(ra.outputs[1].storage, rb.outputs[1].storage);
}

/// An unplanned mask (null data) is not written; the values are the same.
TEST(CudaDropout, UnplannedMask) {
  for (bool training : {true, false}) {
    KernelCase c(Kernel::Dropout);
    c.in(uniform(DType::BF16, {3000}, 7)).out(DType::BF16, {3000}).unplanned(DType::Bool, {3000});
    c.ints = {training, 5};
    c.floats = {0.4f};
    c.step = 3;
    expectSameAsCpu(c, Match::Bits);
  }
}

TEST(CudaDropout, InferenceAndRatioZeroPassThrough) {
  expectSameAsCpu(dropoutCase(DType::F32, {513}, 0.5f, false, 1, 1), Match::Bits);
  expectSameAsCpu(dropoutCase(DType::BF16, {513}, 0.0f, true, 1, 1), Match::Bits);
}

TEST(CudaDropout, RefusalsAgree) {
  expectSameAsCpu(dropoutCase(DType::F32, {8}, 1.0f, true, 1, 1), Match::Bits);
  expectSameAsCpu(dropoutCase(DType::F32, {8}, -0.1f, true, 1, 1), Match::Bits);
  KernelCase ints(Kernel::Dropout);
  ints.in(uniform(DType::I32, {8}, 1)).out(DType::I32, {8}).out(DType::Bool, {8});
  ints.ints = {1, 0};
  ints.floats = {0.5f};
  expectSameAsCpu(ints, Match::Bits);
  ints.ints = {0, 0}; // inference on integers: whatever the CPU does
  expectSameAsCpu(ints, Match::Bits);
  KernelCase badMask(Kernel::Dropout);
  badMask.in(uniform(DType::F32, {8}, 1)).out(DType::F32, {8}).out(DType::F32, {8});
  badMask.ints = {1, 0};
  badMask.floats = {0.5f};
  expectSameAsCpu(badMask, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
