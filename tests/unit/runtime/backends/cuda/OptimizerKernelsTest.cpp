//===- OptimizerKernelsTest.cpp - CUDA AdamW/SGD vs CPU --------------------===//
//
// The CUDA optimizer kernels (OptimizerKernels.cu) under SIMT emulation
// against the CPU's, updating in place as the plans do: AdamW over steps
// (bias corrections), weight decay, f32 and f64; SGD plain, with momentum,
// Nesterov and weight decay. Bit for bit: both run OptimizerUpdate.h.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

TEST(CudaOptimizer, AdamWInPlaceIsTheCpusBits) {
  for (DType t : {DType::F32, DType::F64})
    for (int64_t step : {1, 2, 10, 1000})
      for (float wd : {0.0f, 0.01f}) {
        KernelCase c(Kernel::AdamW);
        c.in(uniform(t, {2500}, 1))
            .in(uniform(t, {2500}, 2, -0.1, 0.1))
            .in(uniform(t, {2500}, 3, -0.01, 0.01))
            .in(uniform(t, {2500}, 4, 0, 0.001))
            .in(values(DType::F64, {}, {3e-4}))
            .in(values(DType::I64, {}, {static_cast<double>(step)}));
        c.inPlace(0).inPlace(2).inPlace(3);
        c.floats = {0.9f, 0.999f, 1e-8f, wd};
        expectSameAsCpu(c, Match::Bits);
      }
}

TEST(CudaOptimizer, SgdVariantsAreTheCpusBits) {
  for (DType t : {DType::F32, DType::F64}) {
    for (bool nesterov : {false, true})
      for (float wd : {0.0f, 0.05f}) {
        KernelCase c(Kernel::Sgd);
        c.in(uniform(t, {1500}, 5))
            .in(uniform(t, {1500}, 6, -0.1, 0.1))
            .in(uniform(t, {1500}, 7, -0.1, 0.1))
            .in(values(DType::F64, {}, {0.1}));
        c.inPlace(0).inPlace(2);
        c.ints = {nesterov};
        c.floats = {0.9f, wd};
        expectSameAsCpu(c, Match::Bits);
      }
    KernelCase plain(Kernel::Sgd);
    plain.in(uniform(t, {300}, 8)).in(uniform(t, {300}, 9)).absent().in(values(DType::F64, {}, {0.5}));
    plain.inPlace(0);
    plain.ints = {0};
    plain.floats = {0.0f, 0.0f};
    expectSameAsCpu(plain, Match::Bits);
  }
}

TEST(CudaOptimizer, RefusalsAgree) {
  KernelCase mismatched(Kernel::AdamW);
  mismatched.in(uniform(DType::F32, {4}, 1))
      .in(uniform(DType::F32, {5}, 2))
      .in(uniform(DType::F32, {4}, 3))
      .in(uniform(DType::F32, {4}, 4))
      .in(values(DType::F64, {}, {1e-3}))
      .in(values(DType::I64, {}, {1}));
  mismatched.inPlace(0).inPlace(2).inPlace(3);
  mismatched.floats = {0.9f, 0.999f, 1e-8f, 0.0f};
  expectSameAsCpu(mismatched, Match::Bits);
  KernelCase halfParams(Kernel::Sgd);
  halfParams.in(uniform(DType::F16, {4}, 1)).in(uniform(DType::F16, {4}, 2)).absent().in(
      values(DType::F64, {}, {0.1}));
  halfParams.inPlace(0);
  halfParams.ints = {0};
  halfParams.floats = {0.0f, 0.0f};
  expectSameAsCpu(halfParams, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
