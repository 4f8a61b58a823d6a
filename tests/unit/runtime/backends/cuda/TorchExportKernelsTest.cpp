//===- TorchExportKernelsTest.cpp - CUDA ops of torch 2.x exports vs CPU ---===//
//
// The CUDA kernels of TorchExportKernels.cu under SIMT emulation against the
// CPU's, on the CPU test's cases plus sizes that span several blocks and
// empty tensors. GELU (both forms) and its gradient are bit for bit where
// the compute type is float (shared FastMath code) and within a few ulps in
// f64 (the C library's erf/exp/tanh on each machine), reciprocal bit for
// bit, cos, sin and softplus (log1p) within a few ulps of each dtype (each
// machine's library); pad (int64 labels with -100, rank 0, an empty input)
// and tile (a dim of 0, rank 0) bit for bit over bit patterns of every
// element size; cumsum forward, exclusive and reverse on every axis and
// every numeric dtype, bit for bit (the CPU's order and precision), with
// wrapping integers; and the malformed operands both refuse.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

const DType kNumeric[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,  DType::I16,
                          DType::I32, DType::I64, DType::U8,  DType::U16,  DType::U32, DType::U64};

/// Relative tolerance (to max(1, |cpu|)) for a result of the C library's
/// math, which differs between machines by an ulp or two of the compute
/// type; rounded to a 16-bit float that can flip one ulp of the result.
double libraryTolerance(DType t) {
  switch (t) {
  case DType::F64: return 1e-14;
  case DType::F32: return 1e-6;
  case DType::F16: return 1e-3;
  default: return 8e-3; // bf16
  }
}

/// x spread over [lo, hi) plus the tails, zero and a tiny value (the CPU
/// test's inputs), `n` elements.
TestTensor mathInput(DType t, int64_t n, uint32_t seed, double lo = -8, double hi = 8) {
  TestTensor x = uniform(t, {n}, seed, lo, hi);
  x.set(0, 0.0);
  x.set(1, -30.0);
  x.set(2, 30.0);
  x.set(3, 1e-3);
  return x;
}

TEST(CudaTorchExport, GeluBothFormsAndGradient) {
  for (DType t : kFloats)
    for (int64_t n : {36, 2049})
      for (int64_t approx : {0, 1}) {
        SCOPED_TRACE(testing::Message() << dtypeName(t) << " n " << n << " tanh " << approx);
        const Match match = t == DType::F64 ? Match::Close : Match::Bits;
        KernelCase g(Kernel::Gelu);
        g.in(mathInput(t, n, 1)).out(t, {n});
        g.ints = {approx};
        expectSameAsCpu(g, match, libraryTolerance(t));
        KernelCase gg(Kernel::GeluGrad);
        gg.in(mathInput(t, n, 2)).in(uniform(t, {n}, 3)).out(t, {n});
        gg.ints = {approx};
        expectSameAsCpu(gg, match, libraryTolerance(t));
      }
}

TEST(CudaTorchExport, ReciprocalCosSinSoftplus) {
  for (DType t : kFloats)
    for (int64_t n : {36, 2049}) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " n " << n);
      // Bits: one IEEE division on both (1/0 = inf included).
      expectSameAsCpu(KernelCase(Kernel::Reciprocal).in(mathInput(t, n, 4)).out(t, {n}),
                      Match::Bits);
      for (Kernel k : {Kernel::Cos, Kernel::Sin})
        expectSameAsCpu(KernelCase(k).in(mathInput(t, n, 5, -10, 10)).out(t, {n}), Match::Close,
                        libraryTolerance(t));
      expectSameAsCpu(KernelCase(Kernel::Softplus).in(mathInput(t, n, 6, -40, 40)).out(t, {n}),
                      Match::Close, libraryTolerance(t));
    }
  // Softplus far in both tails (overflow and underflow of the naive form).
  expectSameAsCpu(KernelCase(Kernel::Softplus)
                      .in(values(DType::F32, {3}, {100, -80, 0}))
                      .out(DType::F32, {3}),
                  Match::Close, libraryTolerance(DType::F32));
}

TEST(CudaTorchExport, MathEmptyAndRefusals) {
  for (Kernel k : {Kernel::Gelu, Kernel::Reciprocal, Kernel::Cos, Kernel::Sin, Kernel::Softplus}) {
    SCOPED_TRACE(kernelName(k));
    KernelCase empty(k);
    empty.in(uniform(DType::F32, {0, 3}, 1)).out(DType::F32, {0});
    empty.ints = {0};
    expectSameAsCpu(empty, Match::Bits);
    KernelCase integers(k); // integers: refused
    integers.in(uniform(DType::I64, {3}, 1)).out(DType::I64, {3});
    integers.ints = {0};
    expectSameAsCpu(integers, Match::Bits);
    KernelCase mismatch(k); // a result of another size: refused
    mismatch.in(uniform(DType::F32, {3}, 1)).out(DType::F32, {4});
    mismatch.ints = {0};
    expectSameAsCpu(mismatch, Match::Bits);
    KernelCase otherType(k); // a result of another dtype: refused
    otherType.in(uniform(DType::F32, {3}, 1)).out(DType::F16, {3});
    otherType.ints = {0};
    expectSameAsCpu(otherType, Match::Bits);
  }
  KernelCase grad(Kernel::GeluGrad); // dy of another size: refused
  grad.in(uniform(DType::F32, {3}, 1)).in(uniform(DType::F32, {4}, 2)).out(DType::F32, {3});
  grad.ints = {0};
  expectSameAsCpu(grad, Match::Bits);
  KernelCase gradInt(Kernel::GeluGrad);
  gradInt.in(uniform(DType::I32, {3}, 1)).in(uniform(DType::I32, {3}, 2)).out(DType::I32, {3});
  gradInt.ints = {1};
  expectSameAsCpu(gradInt, Match::Bits);
}

KernelCase padCase(DType t, const Dims &in, const std::vector<int64_t> &pads, double value) {
  const size_t rank = in.size();
  Dims out(rank);
  for (size_t d = 0; d < rank; ++d)
    out[d] = in[d] + pads[d] + pads[rank + d];
  KernelCase c(Kernel::Pad);
  c.in(pattern(t, in, 11)).in(values(t, {}, {value})).out(t, out);
  c.outputs.back().tensor = pattern(t, out, 12); // stale values
  c.ints = pads;
  return c;
}

TEST(CudaTorchExport, PadPlacesInputAndFillsValue) {
  expectSameAsCpu(padCase(DType::I64, {2, 5}, {0, 0, 0, 1}, -100), Match::Bits); // label shift
  expectSameAsCpu(padCase(DType::F32, {2, 3, 4}, {1, 0, 2, 0, 3, 1}, 0.5), Match::Bits);
  expectSameAsCpu(padCase(DType::BF16, {3}, {2, 2}, -1), Match::Bits);
  expectSameAsCpu(padCase(DType::I32, {}, {}, 7), Match::Bits);
  expectSameAsCpu(padCase(DType::F64, {2, 0, 3}, {0, 1, 1, 1, 0, 0}, 2), Match::Bits);
  expectSameAsCpu(padCase(DType::Bool, {2, 2}, {1, 1, 0, 0}, 1), Match::Bits);
  for (DType t : {DType::U8, DType::F16, DType::F32, DType::I64, DType::Bool})
    expectSameAsCpu(padCase(t, {2, 3, 40}, {1, 0, 2, 0, 0, 3}, 1), Match::Bits); // 405
  expectSameAsCpu(padCase(DType::I64, {8, 511}, {0, 0, 0, 1}, -100), Match::Bits);
}

TEST(CudaTorchExport, PadRefusesWrongShapes) {
  KernelCase total(Kernel::Pad); // pads do not reach the result's shape
  total.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::F32, {}, {0})).out(DType::F32, {2, 4});
  total.ints = {0, 0, 0, 2};
  expectSameAsCpu(total, Match::Bits);
  KernelCase negative(Kernel::Pad);
  negative.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::F32, {}, {0})).out(DType::F32,
                                                                                   {2, 4});
  negative.ints = {0, -1, 0, 2};
  expectSameAsCpu(negative, Match::Bits);
  KernelCase valueType(Kernel::Pad);
  valueType.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::I64, {}, {0})).out(DType::F32,
                                                                                    {2, 4});
  valueType.ints = {0, 0, 0, 1};
  expectSameAsCpu(valueType, Match::Bits);
  KernelCase twoValues(Kernel::Pad);
  twoValues.in(uniform(DType::F32, {2, 3}, 1)).in(values(DType::F32, {2}, {0, 1})).out(
      DType::F32, {2, 4});
  twoValues.ints = {0, 0, 0, 1};
  expectSameAsCpu(twoValues, Match::Bits);
}

KernelCase tileCase(DType t, const Dims &in, const Dims &repeats) {
  Dims out(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    out[d] = in[d] * repeats[d];
  KernelCase c(Kernel::Tile);
  c.in(pattern(t, in, 5)).out(t, out);
  c.outputs.back().tensor = pattern(t, out, 6); // stale values
  return c;
}

TEST(CudaTorchExport, TileRepeatsEveryDim) {
  expectSameAsCpu(tileCase(DType::F32, {2, 3}, {2, 1}), Match::Bits);
  expectSameAsCpu(tileCase(DType::F32, {2, 3}, {1, 3}), Match::Bits);
  expectSameAsCpu(tileCase(DType::I64, {2, 1, 3}, {2, 4, 2}), Match::Bits);
  expectSameAsCpu(tileCase(DType::F16, {5}, {3}), Match::Bits);
  expectSameAsCpu(tileCase(DType::I32, {}, {}), Match::Bits);
  expectSameAsCpu(tileCase(DType::F32, {2, 3}, {0, 2}), Match::Bits);
  for (DType t : {DType::U8, DType::BF16, DType::F32, DType::I64, DType::Bool})
    expectSameAsCpu(tileCase(t, {3, 1, 7}, {2, 40, 3}), Match::Bits); // 5040 elements
  KernelCase notATiling(Kernel::Tile);
  notATiling.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F32, {3, 3});
  expectSameAsCpu(notATiling, Match::Bits);
  KernelCase otherRank(Kernel::Tile);
  otherRank.in(uniform(DType::F32, {2, 3}, 1)).out(DType::F32, {2, 3, 1});
  expectSameAsCpu(otherRank, Match::Bits);
  KernelCase otherType(Kernel::Tile);
  otherType.in(uniform(DType::F32, {2, 3}, 1)).out(DType::I32, {2, 6});
  expectSameAsCpu(otherType, Match::Bits);
}

KernelCase cumsumCase(DType t, const Dims &dims, int64_t axis, int64_t exclusive, int64_t reverse,
                      uint32_t seed = 9) {
  KernelCase c(Kernel::CumSum);
  c.in(uniform(t, dims, seed, -20, 20)).out(t, dims);
  c.ints = {axis, exclusive, reverse};
  return c;
}

TEST(CudaTorchExport, CumSumEveryAxisModeAndDType) {
  for (DType t : kNumeric)
    for (int64_t axis : {0, 1, 2})
      for (int64_t exclusive : {0, 1})
        for (int64_t reverse : {0, 1}) {
          SCOPED_TRACE(testing::Message() << dtypeName(t) << " axis " << axis << " exclusive "
                                          << exclusive << " reverse " << reverse);
          expectSameAsCpu(cumsumCase(t, {3, 4, 5}, axis, exclusive, reverse), Match::Bits);
        }
}

TEST(CudaTorchExport, CumSumLongLinesAndManyLines) {
  for (DType t : {DType::F32, DType::BF16, DType::F16, DType::I32, DType::F64})
    for (int64_t exclusive : {0, 1})
      for (int64_t reverse : {0, 1}) {
        SCOPED_TRACE(testing::Message() << dtypeName(t) << " exclusive " << exclusive
                                        << " reverse " << reverse);
        expectSameAsCpu(cumsumCase(t, {3000}, 0, exclusive, reverse), Match::Bits);
        expectSameAsCpu(cumsumCase(t, {4, 300, 3}, 1, exclusive, reverse), Match::Bits);
        expectSameAsCpu(cumsumCase(t, {7, 1500}, 0, exclusive, reverse), Match::Bits);
      }
}

TEST(CudaTorchExport, CumSumWrapsIntegersAndRefuses) {
  for (DType t : {DType::I32, DType::U8, DType::I8, DType::U64}) {
    KernelCase wrap(Kernel::CumSum);
    wrap.in(values(t, {3}, {2147483647.0, 1, 255})).out(t, {3});
    wrap.ints = {0, 0, 0};
    expectSameAsCpu(wrap, Match::Bits);
  }
  expectSameAsCpu(cumsumCase(DType::F32, {0, 5}, 1, 0, 0), Match::Bits);   // empty
  expectSameAsCpu(cumsumCase(DType::F32, {3}, 1, 0, 0), Match::Bits);      // axis past the rank
  expectSameAsCpu(cumsumCase(DType::F32, {3, 2}, -1, 0, 0), Match::Bits);  // negative axis
  expectSameAsCpu(cumsumCase(DType::Bool, {3, 2}, 0, 0, 0), Match::Bits);  // bool: not numeric
  KernelCase mismatch(Kernel::CumSum);
  mismatch.in(uniform(DType::F32, {3}, 1)).out(DType::F32, {4});
  mismatch.ints = {0, 0, 0};
  expectSameAsCpu(mismatch, Match::Bits);
}

/// Past kMaxBlocks * 256 elements (or cumsum lines) every thread of the
/// grid-stride loops handles several.
TEST(CudaTorchExport, PastTheGrid) {
  KernelCase g(Kernel::Gelu);
  g.in(mathInput(DType::F32, 2200000, 1)).out(DType::F32, {2200000});
  g.ints = {1};
  expectSameAsCpu(g, Match::Bits);
  expectSameAsCpu(padCase(DType::I64, {2200000}, {1, 2}, -100), Match::Bits);
  expectSameAsCpu(tileCase(DType::U8, {1100, 1}, {1, 2001}), Match::Bits);
  expectSameAsCpu(cumsumCase(DType::F32, {2, 2200000}, 0, 1, 0), Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
