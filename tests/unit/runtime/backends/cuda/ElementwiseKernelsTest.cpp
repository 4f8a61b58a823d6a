//===- ElementwiseKernelsTest.cpp - CUDA binary/where/unary/cast vs CPU ----===//
//
// The elementwise CUDA kernels (ElementwiseKernels.cu) under SIMT emulation
// against the CPU kernels, on every dtype each op takes, broadcast shapes,
// sizes that span several blocks, and the refusals. Everything but log and
// pow is the CPU's bits; those call each machine's math library.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};
const DType kNumeric[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                          DType::I16, DType::I32, DType::I64, DType::U8,  DType::U16,
                          DType::U32, DType::U64};
const DType kAll[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                      DType::I16, DType::I32, DType::I64, DType::U8,  DType::U16,
                      DType::U32, DType::U64, DType::Bool};

bool isInt(DType t) {
  return t != DType::F32 && t != DType::F64 && t != DType::F16 && t != DType::BF16 &&
         t != DType::Bool;
}

/// Values for `t`: reals in [-3, 3) for floats and signed ints, [1, 9) for
/// unsigned (no zero divisors unless asked).
TestTensor operand(DType t, Dims dims, uint32_t seed) {
  bool isUnsigned = t == DType::U8 || t == DType::U16 || t == DType::U32 || t == DType::U64;
  TestTensor x = uniform(t, std::move(dims), seed, isUnsigned ? 1 : -3, isUnsigned ? 9 : 3);
  if (isInt(t)) // integer divisors away from zero
    for (int64_t i = 0; i < x.size(); ++i)
      if (x.get(i) == 0)
        x.set(i, 2);
  return x;
}

TEST(CudaElementwise, BinaryOpsMatchOnEveryDTypeAndBroadcast) {
  const Kernel kinds[] = {Kernel::Add, Kernel::Sub, Kernel::Mul, Kernel::Div,
                          Kernel::Max, Kernel::Min};
  // Same shape across several blocks, a trailing-dim broadcast, a scalar,
  // and a broadcast on both sides.
  const std::vector<std::pair<Dims, Dims>> shapes = {
      {{3000}, {3000}}, {{4, 5, 33}, {33}}, {{7, 9}, {}}, {{6, 1, 5}, {1, 4, 1}}};
  for (Kernel kind : kinds)
    for (DType t : kNumeric)
      for (const auto &[sa, sb] : shapes) {
        SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t));
        Dims out = sa.size() >= sb.size() ? sa : sb;
        if (sa == Dims{6, 1, 5})
          out = {6, 4, 5};
        expectSameAsCpu(KernelCase(kind).in(operand(t, sa, 1)).in(operand(t, sb, 2)).out(t, out),
                        Match::Bits);
      }
}

// torch's wrapped number: a bf16/f16 tensor with one f32 element on either
// side of add/sub/mul/div (ElementwiseOps.h's rule: the scalar rounded to
// the tensor's type first except for mul and division by it). 0.1 and 3.3
// are not bf16/f16 values, so a kernel that rounded them where the CPU does
// not (or the reverse) would differ.
TEST(CudaElementwise, WrappedScalarMatchesOnBothSides) {
  const Kernel kinds[] = {Kernel::Add, Kernel::Sub, Kernel::Mul, Kernel::Div};
  for (Kernel kind : kinds)
    for (DType t : {DType::BF16, DType::F16})
      for (float s : {0.1f, 3.3f})
        for (bool scalarFirst : {false, true}) {
          SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t) +
                       (scalarFirst ? " scalar first" : " scalar second"));
          TestTensor x = operand(t, {5, 411}, 7);
          TestTensor scalar = values(DType::F32, {}, {s});
          KernelCase c(kind);
          if (scalarFirst)
            c.in(scalar).in(x);
          else
            c.in(x).in(scalar);
          expectSameAsCpu(c.out(t, {5, 411}), Match::Bits);
        }
}

TEST(CudaElementwise, MaxMinPropagateNaN) {
  TestTensor a = values(DType::F32, {4}, {NAN, 1, -2, NAN});
  TestTensor b = values(DType::F32, {4}, {0, NAN, 3, NAN});
  for (Kernel kind : {Kernel::Max, Kernel::Min})
    expectSameAsCpu(KernelCase(kind).in(a).in(b).out(DType::F32, {4}), Match::Bits);
}

TEST(CudaElementwise, IntegerDivisionByZeroIsRefusedOnBoth) {
  for (DType t : {DType::I32, DType::I64, DType::U8}) {
    TestTensor b = operand(t, {300}, 4);
    b.set(257, 0);
    expectSameAsCpu(KernelCase(Kernel::Div).in(operand(t, {300}, 3)).in(b).out(t, {300}),
                    Match::Bits);
  }
  // Signed wraparound of INT_MIN / -1 is defined and the same.
  TestTensor a = values(DType::I32, {2}, {-2147483648.0, 7});
  TestTensor b = values(DType::I32, {2}, {-1, -1});
  expectSameAsCpu(KernelCase(Kernel::Div).in(a).in(b).out(DType::I32, {2}), Match::Bits);
}

TEST(CudaElementwise, PowSquaresLikeTheCpuAndTakesOtherExponentTypes) {
  for (DType t : kFloats) {
    expectSameAsCpu(KernelCase(Kernel::Pow)
                        .in(operand(t, {1000}, 5))
                        .in(values(t, {}, {2}))
                        .out(t, {1000}),
                    Match::Bits);
    // The general pow is each machine's library: close, not bitwise.
    expectSameAsCpu(KernelCase(Kernel::Pow)
                        .in(uniform(t, {500}, 6, 0.1, 4))
                        .in(uniform(t, {500}, 7, -2, 2))
                        .out(t, {500}),
                    Match::Close, t == DType::F64 ? 1e-14 : 1e-6);
  }
  expectSameAsCpu(KernelCase(Kernel::Pow)
                      .in(uniform(DType::F32, {64}, 8, 0.5, 3))
                      .in(values(DType::I64, {}, {3}))
                      .out(DType::F32, {64}),
                  Match::Close, 1e-6);
  expectSameAsCpu(KernelCase(Kernel::Pow)
                      .in(values(DType::I32, {4}, {2, -3, 5, 0}))
                      .in(values(DType::I32, {4}, {10, 3, 2, 4}))
                      .out(DType::I32, {4}),
                  Match::Bits);
}

TEST(CudaElementwise, UnaryOpsMatch) {
  const Kernel exact[] = {Kernel::Neg, Kernel::Relu, Kernel::Exp, Kernel::Sqrt,
                          Kernel::Erf, Kernel::Tanh, Kernel::Sigmoid};
  for (DType t : kFloats)
    for (Kernel kind : exact) {
      SCOPED_TRACE(std::string(kernelName(kind)) + " " + dtypeName(t));
      TestTensor x = kind == Kernel::Sqrt ? uniform(t, {2500}, 9, 0, 9) : operand(t, {2500}, 9);
      // f64 exp/erf/tanh are each machine's library; f32 ones are shared.
      Match m = t == DType::F64 && (kind == Kernel::Exp || kind == Kernel::Erf ||
                                    kind == Kernel::Tanh || kind == Kernel::Sigmoid)
                    ? Match::Close
                    : Match::Bits;
      expectSameAsCpu(KernelCase(kind).in(x).out(t, {2500}), m, 1e-15);
    }
  for (DType t : kFloats)
    expectSameAsCpu(KernelCase(Kernel::Log).in(uniform(t, {999}, 10, 0.01, 50)).out(t, {999}),
                    Match::Close, t == DType::F64 ? 1e-15 : 1e-7);
  for (DType t : {DType::I8, DType::I32, DType::I64})
    for (Kernel kind : {Kernel::Neg, Kernel::Relu})
      expectSameAsCpu(KernelCase(kind).in(operand(t, {300}, 11)).out(t, {300}), Match::Bits);
  // Refusals agree: exp of an integer, relu of an unsigned.
  expectSameAsCpu(KernelCase(Kernel::Exp).in(operand(DType::I32, {3}, 1)).out(DType::I32, {3}),
                  Match::Bits);
  expectSameAsCpu(KernelCase(Kernel::Relu).in(operand(DType::U8, {3}, 1)).out(DType::U8, {3}),
                  Match::Bits);
  TestTensor mask = values(DType::Bool, {5}, {1, 0, 1, 1, 0});
  mask.setBits(3, 7); // any nonzero byte is true
  expectSameAsCpu(KernelCase(Kernel::Not).in(mask).out(DType::Bool, {5}), Match::Bits);
}

TEST(CudaElementwise, SpecialValuesMatch) {
  TestTensor x = values(DType::F32, {8}, {NAN, INFINITY, -INFINITY, 0.0, -0.0, 100, -100, 1e-40});
  for (Kernel kind : {Kernel::Relu, Kernel::Exp, Kernel::Erf, Kernel::Tanh, Kernel::Sigmoid,
                      Kernel::Neg})
    expectSameAsCpu(KernelCase(kind).in(x).out(DType::F32, {8}), Match::Bits);
}

TEST(CudaElementwise, CastBetweenEveryPairOfDTypes) {
  for (DType from : kAll)
    for (DType to : kAll) {
      SCOPED_TRACE(std::string(dtypeName(from)) + " -> " + dtypeName(to));
      TestTensor x = operand(from, {777}, 12);
      if (from == DType::F32) { // saturation and NaN -> 0
        x.set(0, NAN);
        x.set(1, 1e30);
        x.set(2, -1e30);
        x.set(3, 2.5);
      }
      expectSameAsCpu(KernelCase(Kernel::Cast).in(x).out(to, {777}), Match::Bits);
    }
}

TEST(CudaElementwise, WhereSelectsWithBroadcast) {
  TestTensor cond = values(DType::Bool, {4, 1, 3}, {1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 1, 0});
  cond.setBits(2, 0x40); // nonzero bytes select x
  for (DType t : {DType::F32, DType::F16, DType::I64, DType::Bool, DType::F64})
    expectSameAsCpu(KernelCase(Kernel::Where)
                        .in(cond)
                        .in(operand(t, {5, 3}, 13))
                        .in(operand(t, {}, 14))
                        .out(t, {4, 5, 3}),
                    Match::Bits);
  TestTensor big(DType::Bool, {3000});
  for (int64_t i = 0; i < big.size(); ++i)
    big.set(i, i % 3 == 0);
  expectSameAsCpu(KernelCase(Kernel::Where)
                      .in(big)
                      .in(operand(DType::F32, {3000}, 15))
                      .in(operand(DType::F32, {3000}, 16))
                      .out(DType::F32, {3000}),
                  Match::Bits);
}

TEST(CudaElementwise, MismatchedDTypesAreRefusedOnBoth) {
  expectSameAsCpu(KernelCase(Kernel::Add)
                      .in(operand(DType::F32, {3}, 1))
                      .in(operand(DType::F64, {3}, 2))
                      .out(DType::F32, {3}),
                  Match::Bits);
  expectSameAsCpu(KernelCase(Kernel::Where)
                      .in(operand(DType::F32, {3}, 1))
                      .in(operand(DType::F32, {3}, 2))
                      .in(operand(DType::F32, {3}, 3))
                      .out(DType::F32, {3}),
                  Match::Bits);
}

TEST(CudaElementwise, EmptyTensorsWriteNothing) {
  expectSameAsCpu(KernelCase(Kernel::Add)
                      .in(TestTensor(DType::F32, {0, 3}))
                      .in(TestTensor(DType::F32, {3}))
                      .out(DType::F32, {0, 3}),
                  Match::Bits);
  expectSameAsCpu(KernelCase(Kernel::Cast).in(TestTensor(DType::F32, {0})).out(DType::I32, {0}),
                  Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
