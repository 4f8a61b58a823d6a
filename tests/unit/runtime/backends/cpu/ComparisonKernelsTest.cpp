//===- ComparisonKernelsTest.cpp - compare, logical, is_nan/is_inf, max/min -===//
//
// The comparison family (runtime/backends/cpu/kernels/ComparisonKernels.cpp)
// and Max/Min (ElementwiseKernels.cpp) against direct scalar references,
// over every broadcast pattern the row loops specialize, every numeric
// dtype, NaN and infinities, and bool bytes other than 0 and 1.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using Tensor = kerneltest::TestTensor;
using Dims = kerneltest::Dims;

/// Flat index of the broadcast source element (numpy rules).
int64_t source(int64_t flat, const Dims &out, const Dims &in) {
  int64_t index = 0, stride = 1;
  for (int d = static_cast<int>(out.size()) - 1; d >= 0; --d) {
    int64_t coord = flat % out[d];
    flat /= out[d];
    int inDim = d - static_cast<int>(out.size() - in.size());
    if (inDim < 0)
      continue;
    if (in[inDim] != 1)
      index += coord * stride;
    stride *= in[inDim];
  }
  return index;
}

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

/// Small values with repeats, so equal pairs occur; NaN and infinities in
/// float dtypes.
void fillSpecial(Tensor &t, uint32_t seed, bool specials) {
  for (int64_t i = 0; i < t.size(); ++i) {
    uint32_t r = (i * 2654435761u + seed * 40503u) >> 7;
    double v = static_cast<double>(r % 7) - 3.0;
    if (specials && r % 11 == 0)
      v = kNaN;
    else if (specials && r % 13 == 0)
      v = (r & 1) ? kInf : -kInf;
    t.set(i, v);
  }
}

struct Shapes {
  Dims a, b, out;
};
const Shapes kShapes[] = {
    {{3, 4}, {3, 4}, {3, 4}}, // contiguous
    {{3, 4}, {4}, {3, 4}},    // trailing dims
    {{3, 1}, {1, 4}, {3, 4}}, // both broadcast
    {{2, 3, 4}, {}, {2, 3, 4}}, // scalar
};

bool reference(ComparePredicate p, double x, double y) {
  switch (p) {
  case ComparePredicate::Eq: return x == y;
  case ComparePredicate::Lt: return x < y;
  case ComparePredicate::Le: return x <= y;
  case ComparePredicate::Gt: return x > y;
  case ComparePredicate::Ge: return x >= y;
  }
  return false;
}

TEST(ComparisonKernels, CompareEveryPredicateDtypeAndBroadcast) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16, DType::I64, DType::I32}) {
    bool isFloat = dtype == DType::F32 || dtype == DType::F64 || dtype == DType::BF16 ||
                   dtype == DType::F16;
    for (const Shapes &s : kShapes) {
      Tensor a(dtype, s.a), b(dtype, s.b), out(DType::Bool, s.out);
      fillSpecial(a, 1, isFloat);
      fillSpecial(b, 2, isFloat);
      for (ComparePredicate p : {ComparePredicate::Eq, ComparePredicate::Lt, ComparePredicate::Le,
                                 ComparePredicate::Gt, ComparePredicate::Ge}) {
        ASSERT_TRUE(compare(p, a.ref(), b.ref(), out.ref()).isOk());
        for (int64_t i = 0; i < out.size(); ++i)
          ASSERT_EQ(out.get(i) != 0,
                    reference(p, a.get(source(i, s.out, s.a)), b.get(source(i, s.out, s.b))))
              << dtypeName(dtype) << " predicate " << static_cast<int>(p) << " element " << i;
      }
    }
  }
}

TEST(ComparisonKernels, BoolEqualTreatsAnyNonzeroByteAsTrue) {
  Tensor a(DType::Bool, {4}), b(DType::Bool, {4}), out(DType::Bool, {4});
  const uint64_t left[] = {0, 1, 2, 255}, right[] = {0, 7, 1, 0};
  for (int i = 0; i < 4; ++i) {
    a.setBits(i, left[i]);
    b.setBits(i, right[i]);
  }
  ASSERT_TRUE(compare(ComparePredicate::Eq, a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_EQ(out.values(), (std::vector<double>{1, 1, 1, 0}));
  EXPECT_FALSE(compare(ComparePredicate::Lt, a.ref(), b.ref(), out.ref()).isOk());
}

TEST(ComparisonKernels, CompareRefusesMixedDtypesAndNonBoolResults) {
  Tensor f(DType::F32, {2}), i(DType::I64, {2}), out(DType::Bool, {2}), bad(DType::F32, {2});
  EXPECT_FALSE(compare(ComparePredicate::Eq, f.ref(), i.ref(), out.ref()).isOk());
  EXPECT_FALSE(compare(ComparePredicate::Eq, f.ref(), f.ref(), bad.ref()).isOk());
}

TEST(ComparisonKernels, LogicalTruthTablesWithBroadcast) {
  Tensor a(DType::Bool, {2, 1}), b(DType::Bool, {2}), out(DType::Bool, {2, 2});
  a.setBits(0, 0);
  a.setBits(1, 9); // nonzero byte: true
  b.setBits(0, 0);
  b.setBits(1, 1);
  ASSERT_TRUE(logical(LogicalKind::And, a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_EQ(out.values(), (std::vector<double>{0, 0, 0, 1}));
  ASSERT_TRUE(logical(LogicalKind::Or, a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_EQ(out.values(), (std::vector<double>{0, 1, 1, 1}));
  ASSERT_TRUE(logical(LogicalKind::Xor, a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_EQ(out.values(), (std::vector<double>{0, 1, 1, 0}));
  Tensor f(DType::F32, {2});
  EXPECT_FALSE(logical(LogicalKind::And, f.ref(), b.ref(), out.ref()).isOk());
}

TEST(ComparisonKernels, IsNaNAndIsInf) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16}) {
    Tensor x(dtype, {5}), out(DType::Bool, {5});
    const double values[] = {1.0, kNaN, kInf, -kInf, -0.0};
    for (int i = 0; i < 5; ++i)
      x.set(i, values[i]);
    ASSERT_TRUE(isNaN(x.ref(), out.ref()).isOk());
    EXPECT_EQ(out.values(), (std::vector<double>{0, 1, 0, 0, 0})) << dtypeName(dtype);
    ASSERT_TRUE(isInf(x.ref(), true, true, out.ref()).isOk());
    EXPECT_EQ(out.values(), (std::vector<double>{0, 0, 1, 1, 0}));
    ASSERT_TRUE(isInf(x.ref(), false, true, out.ref()).isOk());
    EXPECT_EQ(out.values(), (std::vector<double>{0, 0, 1, 0, 0}));
    ASSERT_TRUE(isInf(x.ref(), true, false, out.ref()).isOk());
    EXPECT_EQ(out.values(), (std::vector<double>{0, 0, 0, 1, 0}));
  }
  Tensor i(DType::I64, {2}), out(DType::Bool, {2});
  EXPECT_FALSE(isNaN(i.ref(), out.ref()).isOk());
}

TEST(ComparisonKernels, MaxMinPropagateNaNAndBroadcast) {
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::I64, DType::I32}) {
    bool isFloat = dtype != DType::I64 && dtype != DType::I32;
    for (const Shapes &s : kShapes) {
      Tensor a(dtype, s.a), b(dtype, s.b), out(dtype, s.out);
      fillSpecial(a, 3, isFloat);
      fillSpecial(b, 4, isFloat);
      for (bool isMax : {true, false}) {
        ASSERT_TRUE(binary(isMax ? BinaryKind::Max : BinaryKind::Min, a.ref(), b.ref(), out.ref())
                        .isOk());
        for (int64_t i = 0; i < out.size(); ++i) {
          double x = a.get(source(i, s.out, s.a)), y = b.get(source(i, s.out, s.b));
          double want = std::isnan(x) || std::isnan(y) ? kNaN
                        : isMax                      ? std::max(x, y)
                                                     : std::min(x, y);
          double got = out.get(i);
          if (std::isnan(want))
            ASSERT_TRUE(std::isnan(got)) << dtypeName(dtype) << " element " << i;
          else
            ASSERT_EQ(got, want) << dtypeName(dtype) << " element " << i;
        }
      }
    }
  }
}

} // namespace
