//===- TorchExportKernelsTest.cpp - CUDA ops of torch 2.x exports vs CPU ---===//
//
// The CUDA kernels of TorchExportKernels.cu under SIMT emulation against the
// CPU's: GELU (both forms) and its gradient, reciprocal and softplus bit for
// bit (shared scalar code), cos and sin within an ulp (each machine's
// library), constant pad and tile on several ranks and element sizes, and
// cumsum forward, exclusive and reverse on every axis (the CPU's order and
// precision: bit for bit), with the refusals.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

TEST(CudaTorchExport, MathAndGeluGradient) {
  for (DType t : kFloats) {
    for (int64_t approx : {0, 1}) {
      KernelCase g(Kernel::Gelu);
      g.in(uniform(t, {2049}, 1, -6, 6)).out(t, {2049});
      g.ints = {approx};
      expectSameAsCpu(g, t == DType::F64 ? Match::Close : Match::Bits, 1e-15);
      KernelCase gg(Kernel::GeluGrad);
      gg.in(uniform(t, {2049}, 2, -6, 6)).in(uniform(t, {2049}, 3)).out(t, {2049});
      gg.ints = {approx};
      expectSameAsCpu(gg, t == DType::F64 ? Match::Close : Match::Bits, 1e-15);
    }
    expectSameAsCpu(KernelCase(Kernel::Reciprocal).in(uniform(t, {999}, 4, 0.1, 9)).out(t, {999}),
                    Match::Bits);
    expectSameAsCpu(KernelCase(Kernel::Softplus).in(uniform(t, {999}, 5, -30, 30)).out(t, {999}),
                    Match::Close, t == DType::F64 ? 1e-15 : 1e-6);
    for (Kernel k : {Kernel::Cos, Kernel::Sin})
      expectSameAsCpu(KernelCase(k).in(uniform(t, {999}, 6, -10, 10)).out(t, {999}), Match::Close,
                      t == DType::F64 ? 1e-15 : 1e-6);
  }
}

TEST(CudaTorchExport, PadAndTile) {
  for (DType t : {DType::Bool, DType::F16, DType::F32, DType::I64}) {
    KernelCase p(Kernel::Pad);
    p.in(uniform(t, {2, 3, 40}, 7)).in(values(t, {}, {1})).out(t, {3, 3, 45});
    p.ints = {1, 0, 2, 0, 0, 3};
    expectSameAsCpu(p, Match::Bits);
    KernelCase tile(Kernel::Tile);
    tile.in(uniform(t, {2, 1, 3}, 8)).out(t, {4, 5, 3});
    expectSameAsCpu(tile, Match::Bits);
  }
  KernelCase wrong(Kernel::Pad);
  wrong.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::F32, {}, {0})).out(DType::F32, {3, 3});
  wrong.ints = {0, 0, 0, 0};
  expectSameAsCpu(wrong, Match::Bits);
}

TEST(CudaTorchExport, CumSumEveryAxisAndMode) {
  for (DType t : {DType::F32, DType::F64, DType::BF16, DType::I32, DType::I64})
    for (int64_t axis : {0, 1, 2})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          KernelCase c(Kernel::CumSum);
          c.in(uniform(t, {4, 300, 3}, 9, -20, 20)).out(t, {4, 300, 3});
          c.ints = {axis, exclusive, reverse};
          expectSameAsCpu(c, Match::Bits);
        }
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
