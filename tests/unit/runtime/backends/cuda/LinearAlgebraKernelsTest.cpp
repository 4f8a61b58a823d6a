//===- LinearAlgebraKernelsTest.cpp - CUDA matmul/gemm vs CPU --------------===//
//
// The CUDA linear-algebra kernels (LinearAlgebraKernels.cu) under SIMT
// emulation against the CPU kernels: f32/f64 through the column-major
// mapping and cblas (what cuBLAS runs on a GPU), integers and 16-bit
// floats through the naive kernel over the same mapping (bitwise: the
// CPU's accumulation order), gemm's bias broadcast and scaling, and the
// refusals. The CPU's own 16-bit products are library calls (oneDNN, or
// sgemm on widened operands: GemmLibrary.h) that sum in their own order,
// so the SIMT kernel matches them within one rounding of the result type
// (DESIGN: library calls may differ within tolerance), and matches the
// CPU's naive loop (FSDP_CPU_GEMM=naive) bit for bit.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

#include <cstdlib>

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

struct Shape {
  Dims a, b, out;
  bool transA, transB;
};

const Shape kShapes[] = {
    {{5, 7}, {7, 3}, {5, 3}, false, false},          {{7, 5}, {3, 7}, {5, 3}, true, true},
    {{2, 6, 8}, {5, 8}, {2, 6, 5}, false, true},     {{2, 3, 4, 8}, {2, 3, 4, 8}, {2, 3, 4, 4}, false, true},
    {{2, 1, 4, 5}, {1, 3, 5, 2}, {2, 3, 4, 2}, false, false},
    {{7}, {2, 7, 3}, {2, 3}, false, false},          {{4, 7}, {7}, {4}, false, false},
    {{3, 0}, {0, 4}, {3, 4}, false, false},          {{40, 33}, {33, 70}, {40, 70}, false, false},
};

bool isHalf(DType t) { return t == DType::F16 || t == DType::BF16; }

/// One rounding of a 16-bit result, relative (SimtKernelHarness's Close):
/// 2^-7 is one bf16 ulp of values in [1, 2), 2^-10 one f16 ulp.
double halfUlp(DType t) { return t == DType::BF16 ? 0x1p-7 : 0x1p-10; }

/// A 16-bit case against the CPU's library route within one rounding, and
/// against its naive loop bit for bit; other dtypes as `match` says.
void expectProductAsCpu(const KernelCase &c, DType t, Match match, double tolerance = 0) {
  if (!isHalf(t)) {
    expectSameAsCpu(c, match, tolerance);
    return;
  }
  expectSameAsCpu(c, Match::Close, halfUlp(t));
  setenv("FSDP_CPU_GEMM", "naive", 1);
  expectSameAsCpu(c, Match::Bits);
  unsetenv("FSDP_CPU_GEMM");
}

KernelCase matmulCase(DType t, const Shape &s) {
  KernelCase c(Kernel::MatMul);
  c.in(uniform(t, s.a, 1, -3, 3)).in(uniform(t, s.b, 2, -3, 3)).out(t, s.out);
  if (s.transA || s.transB)
    c.ints = {s.transA, s.transB};
  return c;
}

TEST(CudaLinearAlgebra, MatMulThroughTheMappingMatches) {
  for (const Shape &s : kShapes) {
    // cblas column-major with swapped operands is OpenBLAS's own row-major
    // path: the CPU's OpenBLAS route (FSDP_CPU_GEMM=widen) to 1e-6; its
    // default f32 route, oneDNN's, sums in another order.
    expectSameAsCpu(matmulCase(DType::F32, s), Match::Close, 1e-5);
    setenv("FSDP_CPU_GEMM", "widen", 1);
    expectSameAsCpu(matmulCase(DType::F32, s), Match::Close, 1e-6);
    unsetenv("FSDP_CPU_GEMM");
    expectSameAsCpu(matmulCase(DType::F64, s), Match::Close, 1e-14);
    for (DType t : {DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8})
      expectProductAsCpu(matmulCase(t, s), t, Match::Bits);
  }
}

TEST(CudaLinearAlgebra, GemmWithBiasAlphaAndBeta) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32})
    for (bool transA : {false, true})
      for (bool transB : {false, true})
        for (float beta : {0.0f, 1.0f, 0.5f}) {
          KernelCase c(Kernel::Gemm);
          c.in(uniform(t, transA ? Dims{6, 4} : Dims{4, 6}, 3, -3, 3))
              .in(uniform(t, transB ? Dims{5, 6} : Dims{6, 5}, 4, -3, 3))
              .in(uniform(t, {1, 5}, 5, -3, 3))
              .out(t, {4, 5});
          c.ints = {transA, transB};
          c.floats = {t == DType::I32 ? 1.0f : 0.75f, beta};
          Match m = t == DType::F32 || t == DType::F64 ? Match::Close : Match::Bits;
          expectProductAsCpu(c, t, m, t == DType::F64 ? 1e-14 : 1e-6);
        }
  KernelCase noBias(Kernel::Gemm);
  noBias.in(uniform(DType::F32, {4, 6}, 1)).in(uniform(DType::F32, {6, 5}, 2)).absent().out(
      DType::F32, {4, 5});
  noBias.ints = {0, 0};
  noBias.floats = {1.0f, 1.0f};
  expectSameAsCpu(noBias, Match::Close, 1e-6);
}

TEST(CudaLinearAlgebra, RefusalsAgree) {
  KernelCase mixed(Kernel::MatMul);
  mixed.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F64, {3, 2}, 2)).out(DType::F32,
                                                                                   {2, 2});
  expectSameAsCpu(mixed, Match::Bits);
  KernelCase contraction(Kernel::MatMul);
  contraction.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F32, {4, 2}, 2)).out(
      DType::F32, {2, 2});
  expectSameAsCpu(contraction, Match::Bits);
  // A result or batch that does not fit the operands, and gemm's shapes.
  KernelCase result(Kernel::MatMul);
  result.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F32, {3, 2}, 2)).out(DType::F32,
                                                                                  {2, 3});
  expectSameAsCpu(result, Match::Bits);
  KernelCase batch(Kernel::MatMul);
  batch.in(uniform(DType::F32, {3, 2, 3}, 1)).in(uniform(DType::F32, {3, 2}, 2)).out(
      DType::F32, {2, 2, 2});
  expectSameAsCpu(batch, Match::Bits);
  for (Dims bias : {Dims{3}, Dims{2, 3}, Dims{1, 1, 2}}) {
    KernelCase g(Kernel::Gemm);
    g.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F32, {3, 2}, 2));
    g.in(uniform(DType::F32, bias, 3)).out(DType::F32, {2, 2});
    g.ints = {0, 0};
    g.floats = {1.0f, 1.0f};
    expectSameAsCpu(g, Match::Bits);
  }
  KernelCase gemmK(Kernel::Gemm);
  gemmK.in(uniform(DType::F32, {2, 3}, 1)).in(uniform(DType::F32, {4, 2}, 2)).absent().out(
      DType::F32, {2, 2});
  gemmK.ints = {0, 0};
  gemmK.floats = {1.0f, 0.0f};
  expectSameAsCpu(gemmK, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
