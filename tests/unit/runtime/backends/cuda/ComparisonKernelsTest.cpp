//===- ComparisonKernelsTest.cpp - CUDA compare/logic/isnan/isinf vs CPU ---===//
//
// The comparison CUDA kernels (ComparisonKernels.cu) under SIMT emulation
// against the CPU kernels: every predicate on every numeric dtype with
// NaN and infinities in the operands, bool equality and logic on
// arbitrary nonzero bytes, broadcast shapes and the refusals. All exact.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cuda/SimtKernelHarness.h"

namespace fsdp::rt::cuda::simttest {
namespace {

using plan::Kernel;

TEST(CudaComparison, EveryPredicateOnEveryNumericDType) {
  const DType types[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                         DType::I32, DType::I64, DType::U8,  DType::U64};
  for (DType t : types)
    for (int64_t predicate = 0; predicate <= 4; ++predicate) {
      SCOPED_TRACE(std::string(dtypeName(t)) + " predicate " + std::to_string(predicate));
      TestTensor a = uniform(t, {5, 300}, 1, 0, 4), b = uniform(t, {300}, 2, 0, 4);
      if (t == DType::F32 || t == DType::F64) {
        a.set(0, NAN);
        b.set(1, NAN);
        a.set(2, INFINITY);
        b.set(3, -INFINITY);
      }
      KernelCase c(Kernel::Compare);
      c.in(a).in(b).out(DType::Bool, {5, 300});
      c.ints = {predicate};
      expectSameAsCpu(c, Match::Bits);
    }
}

TEST(CudaComparison, BoolEqualityAndLogicTreatNonzeroBytesAsTrue) {
  TestTensor a = values(DType::Bool, {2, 4}, {1, 0, 1, 0, 1, 1, 0, 0});
  TestTensor b = values(DType::Bool, {4}, {1, 1, 0, 0});
  a.setBits(4, 0x80);
  b.setBits(1, 3);
  KernelCase eq(Kernel::Compare);
  eq.in(a).in(b).out(DType::Bool, {2, 4});
  eq.ints = {0};
  expectSameAsCpu(eq, Match::Bits);
  for (int64_t op = 0; op <= 2; ++op) {
    KernelCase c(Kernel::Logical);
    c.in(a).in(b).out(DType::Bool, {2, 4});
    c.ints = {op};
    expectSameAsCpu(c, Match::Bits);
  }
  // Ordering bools is refused by both; so is logic on non-bool operands.
  KernelCase lt(Kernel::Compare);
  lt.in(a).in(b).out(DType::Bool, {2, 4});
  lt.ints = {1};
  expectSameAsCpu(lt, Match::Bits);
  KernelCase logicF32(Kernel::Logical);
  logicF32.in(uniform(DType::F32, {4}, 1)).in(uniform(DType::F32, {4}, 2)).out(DType::Bool, {4});
  logicF32.ints = {0};
  expectSameAsCpu(logicF32, Match::Bits);
}

TEST(CudaComparison, FloatClasses) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    TestTensor x = uniform(t, {1100}, 3);
    x.set(5, NAN);
    x.set(6, INFINITY);
    x.set(7, -INFINITY);
    x.set(1099, NAN);
    expectSameAsCpu(KernelCase(Kernel::IsNaN).in(x).out(DType::Bool, {1100}), Match::Bits);
    for (int64_t neg = 0; neg <= 1; ++neg)
      for (int64_t pos = 0; pos <= 1; ++pos) {
        KernelCase c(Kernel::IsInf);
        c.in(x).out(DType::Bool, {1100});
        c.ints = {neg, pos};
        expectSameAsCpu(c, Match::Bits);
      }
  }
  expectSameAsCpu(KernelCase(Kernel::IsNaN).in(uniform(DType::I32, {3}, 1)).out(DType::Bool, {3}),
                  Match::Bits);
}

TEST(CudaComparison, MismatchedOperandsAreRefusedOnBoth) {
  KernelCase c(Kernel::Compare);
  c.in(uniform(DType::F32, {3}, 1)).in(uniform(DType::F64, {3}, 2)).out(DType::Bool, {3});
  c.ints = {0};
  expectSameAsCpu(c, Match::Bits);
  KernelCase notBool(Kernel::Compare);
  notBool.in(uniform(DType::F32, {3}, 1)).in(uniform(DType::F32, {3}, 2)).out(DType::F32, {3});
  notBool.ints = {0};
  expectSameAsCpu(notBool, Match::Bits);
}

} // namespace
} // namespace fsdp::rt::cuda::simttest
