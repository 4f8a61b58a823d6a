//===- OptimizerKernelsTest.cpp - CUDA AdamW/SGD vs CPU --------------------===//
//
// The CUDA optimizer kernels (OptimizerKernels.cu) under SIMT emulation
// against the CPU's, updating in place as the plans do: AdamW over steps
// (bias corrections), weight decay, f32 and f64; SGD plain, with momentum,
// Nesterov and weight decay, and a zero momentum buffer (torch's first
// step); sizes of 0, 1, 7, 257 and several blocks; separate result
// buffers; dynamic loss scaling's found_inf flag (set: the results keep the
// operands; clear: the plain update); the refusals (a step below 1 is a
// device fault on CUDA). Bit for bit: both run OptimizerUpdate.h.
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

KernelCase adamwCase(DType t, int64_t n, double lr, int64_t step) {
  KernelCase c(Kernel::AdamW);
  c.in(uniform(t, {n}, 1))
      .in(uniform(t, {n}, 2, -0.1, 0.1))
      .in(uniform(t, {n}, 3, -0.01, 0.01))
      .in(uniform(t, {n}, 4, 0, 0.001))
      .in(values(DType::F64, {}, {lr}))
      .in(values(DType::I64, {}, {static_cast<double>(step)}));
  c.floats = {0.9f, 0.999f, 1e-8f, 0.01f};
  return c;
}

KernelCase sgdCase(DType t, int64_t n, bool withBuffer, bool nesterov, float wd) {
  KernelCase c(Kernel::Sgd);
  c.in(uniform(t, {n}, 5)).in(uniform(t, {n}, 6, -0.1, 0.1));
  withBuffer ? (void)c.in(uniform(t, {n}, 7, -0.1, 0.1)) : (void)c.absent();
  c.in(values(DType::F64, {}, {0.05}));
  c.ints = {nesterov};
  c.floats = {withBuffer ? 0.9f : 0.0f, wd};
  return c;
}

TEST(CudaOptimizer, OddSizesAndSeparateResults) {
  for (DType t : {DType::F32, DType::F64})
    for (int64_t n : {0, 1, 7, 257, 70001}) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " n " + std::to_string(n));
      KernelCase inPlace = adamwCase(t, n, 1e-3, 3);
      inPlace.inPlace(0).inPlace(2).inPlace(3);
      expectSameAsCpu(inPlace, Match::Bits);
      KernelCase separate = adamwCase(t, n, 1e-3, 3);
      separate.out(t, {n}).out(t, {n}).out(t, {n});
      expectSameAsCpu(separate, Match::Bits);
      for (bool withBuffer : {false, true}) {
        KernelCase s = sgdCase(t, n, withBuffer, withBuffer, 0.01f);
        s.inPlace(0);
        if (withBuffer)
          s.inPlace(2);
        expectSameAsCpu(s, Match::Bits);
        KernelCase apart = sgdCase(t, n, withBuffer, false, 0.0f);
        apart.out(t, {n});
        if (withBuffer)
          apart.out(t, {n});
        expectSameAsCpu(apart, Match::Bits);
      }
    }
}

/// A found_inf flag (the last operand): non-zero skips the update, in place
/// or into separate results; zero is the update without a flag.
TEST(CudaOptimizer, FoundInfFlag) {
  for (DType t : {DType::F32, DType::F64})
    for (double flag : {0.0, 1.0, 3.0})
      for (int64_t n : {0, 7, 2500}) {
        SCOPED_TRACE(std::string(dtypeName(t)) + " flag " + std::to_string(flag) + " n " +
                     std::to_string(n));
        KernelCase inPlace = adamwCase(t, n, 1e-3, 2);
        inPlace.in(values(DType::F32, {}, {flag}));
        inPlace.inPlace(0).inPlace(2).inPlace(3);
        expectSameAsCpu(inPlace, Match::Bits);
        KernelCase separate = adamwCase(t, n, 1e-3, 2);
        separate.in(values(DType::F32, {}, {flag}));
        separate.out(t, {n}).out(t, {n}).out(t, {n});
        expectSameAsCpu(separate, Match::Bits);
        for (bool withBuffer : {false, true}) {
          KernelCase s = sgdCase(t, n, withBuffer, false, 0.01f);
          s.in(values(DType::F32, {}, {flag}));
          s.inPlace(0);
          if (withBuffer)
            s.inPlace(2);
          expectSameAsCpu(s, Match::Bits);
          KernelCase apart = sgdCase(t, n, withBuffer, withBuffer, 0.0f);
          apart.in(values(DType::F32, {}, {flag}));
          apart.out(t, {n});
          if (withBuffer)
            apart.out(t, {n});
          expectSameAsCpu(apart, Match::Bits);
        }
      }
  // The flag must be an f32 scalar on both backends.
  KernelCase wrongFlag = adamwCase(DType::F32, 4, 1e-3, 1);
  wrongFlag.in(values(DType::F64, {}, {1.0}));
  wrongFlag.inPlace(0).inPlace(2).inPlace(3);
  expectSameAsCpu(wrongFlag, Match::Bits);
}

/// torch's first momentum step clones d_p into the buffer; the kernels
/// start from a zero buffer, which must give the same bits (signed zeros
/// and tiny gradients included).
TEST(CudaOptimizer, ZeroMomentumBuffer) {
  for (DType t : {DType::F32, DType::F64})
    for (bool nesterov : {false, true}) {
      KernelCase c(Kernel::Sgd);
      TestTensor grad = uniform(t, {1000}, 11, -1e-30, 1e-30);
      grad.set(0, -0.0);
      grad.set(1, 0.0);
      c.in(uniform(t, {1000}, 10)).in(grad).in(values(t, {1000}, std::vector<double>(1000, 0.0)));
      c.in(values(DType::F64, {}, {0.01}));
      c.inPlace(0).inPlace(2);
      c.ints = {nesterov};
      c.floats = {0.9f, 0.0f};
      expectSameAsCpu(c, Match::Bits);
    }
}

TEST(CudaOptimizer, RefusalsAgree) {
  // A step below 1: the CPU's Status, CUDA's StepOutOfRange fault (also
  // for an empty tensor); nothing is written.
  for (int64_t step : {0, -3})
    for (int64_t n : {0, 600}) {
      KernelCase c = adamwCase(DType::F32, n, 1e-3, step);
      c.inPlace(0).inPlace(2).inPlace(3);
      expectSameAsCpu(c, Match::Bits);
    }
  KernelCase lr32 = adamwCase(DType::F32, 4, 1e-3, 1);
  lr32.inputs[4] = values(DType::F32, {}, {1e-3});
  lr32.inPlace(0).inPlace(2).inPlace(3);
  expectSameAsCpu(lr32, Match::Bits);
  KernelCase intLr = sgdCase(DType::F32, 4, false, false, 0.0f);
  intLr.inputs[3] = values(DType::I64, {}, {1});
  intLr.inPlace(0);
  expectSameAsCpu(intLr, Match::Bits);
  KernelCase shortGrad = sgdCase(DType::F64, 4, true, false, 0.0f);
  shortGrad.inputs[1] = uniform(DType::F64, {3}, 2);
  shortGrad.inPlace(0).inPlace(2);
  expectSameAsCpu(shortGrad, Match::Bits);
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
