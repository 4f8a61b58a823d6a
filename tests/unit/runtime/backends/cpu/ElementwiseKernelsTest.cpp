//===- ElementwiseKernelsTest.cpp - binary/where/unary/cast and Half.h ----===//
//
// Checks the elementwise CPU kernels against naive references written here
// (unravel every output index, map it to each operand by numpy broadcasting,
// compute in double and round to the dtype), over every dtype and the
// broadcasting shapes the fast paths specialize (same shape, scalar,
// trailing dims, [2,1]+[1,3], zero-size). Arithmetic on small exactly
// representable values is compared exactly; transcendental functions with
// a per-dtype tolerance. Edge cases (wrapping, INT_MIN / -1, division by
// zero, saturating casts) and Half.h rounding have hand-computed expectations.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/support/Half.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using Tensor = kerneltest::TestTensor;

/// Flat index into `in` of the output element at `outFlat` under numpy
/// broadcasting of `in` to `outDims`.
int64_t broadcastSource(int64_t outFlat, const std::vector<int64_t> &outDims,
                        const std::vector<int64_t> &inDims) {
  int64_t inFlat = 0, inStride = 1;
  for (int d = static_cast<int>(outDims.size()) - 1; d >= 0; --d) {
    int64_t coord = outFlat % outDims[d];
    outFlat /= outDims[d];
    int inDim = d - static_cast<int>(outDims.size() - inDims.size());
    if (inDim < 0)
      continue;
    if (inDims[inDim] != 1)
      inFlat += coord * inStride;
    inStride *= inDims[inDim];
  }
  return inFlat;
}

std::vector<int64_t> broadcastShape(const std::vector<int64_t> &a, const std::vector<int64_t> &b) {
  std::vector<int64_t> out(std::max(a.size(), b.size()), 1);
  for (size_t i = 0; i < out.size(); ++i) {
    int64_t da = i < a.size() ? a[a.size() - 1 - i] : 1;
    int64_t db = i < b.size() ? b[b.size() - 1 - i] : 1;
    out[out.size() - 1 - i] = da == 1 ? db : da;
  }
  return out;
}

bool isUnsigned(DType t) { return t >= DType::U8 && t <= DType::U64; }

/// Deterministic small values every dtype represents exactly: integers in
/// [lo, hi] (never negative for unsigned), quarter steps for floats.
void fill(Tensor &t, int lo, int hi, uint32_t seed, bool nonZero = false) {
  std::mt19937 rng(seed);
  if (isUnsigned(t.dtype) || t.dtype == DType::Bool)
    lo = std::max(lo, 0);
  if (t.dtype == DType::Bool)
    hi = 1;
  std::uniform_int_distribution<int> dist(lo, hi);
  for (int64_t i = 0; i < t.size(); ++i) {
    double v = dist(rng);
    if (isFloat(t.dtype))
      v += 0.25 * (rng() % 4);
    if (nonZero && v == 0)
      v = 1;
    t.set(i, v);
  }
}

/// Exact when the operation is correctly rounded in the dtype's compute type.
void expectSameValues(const Tensor &got, const std::vector<double> &expected, double relTol = 0) {
  ASSERT_EQ(got.size(), static_cast<int64_t>(expected.size()));
  for (int64_t i = 0; i < got.size(); ++i) {
    double g = got.get(i), e = expected[i];
    if (std::isnan(e)) {
      EXPECT_TRUE(std::isnan(g)) << "element " << i;
    } else if (relTol == 0 || std::isinf(e)) {
      EXPECT_EQ(g, e) << "element " << i;
    } else {
      EXPECT_NEAR(g, e, relTol * std::max(1.0, std::fabs(e))) << "element " << i;
    }
  }
}

/// The dtype's value nearest to v, as the kernels' store rounds it.
double roundTo(DType t, double v) {
  Tensor one(t, {});
  one.set(0, v);
  return one.get(0);
}

double tolerance(DType t) {
  switch (t) {
  case DType::F16: return 2e-3;
  case DType::BF16: return 1e-2;
  case DType::F32: return 2e-6;
  default: return 1e-12;
  }
}

const DType kNumeric[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8, DType::I16,
                          DType::I32, DType::I64, DType::U8,  DType::U16,  DType::U32, DType::U64};
const DType kAll[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I8,
                      DType::I16, DType::I32, DType::I64, DType::U8,   DType::U16,
                      DType::U32, DType::U64, DType::Bool};

using ShapePair = std::pair<std::vector<int64_t>, std::vector<int64_t>>;
const ShapePair kBroadcastCases[] = {
    {{2, 3, 4}, {2, 3, 4}}, {{3, 4, 5}, {5}},    {{5}, {3, 4, 5}},   {{2, 1}, {1, 3}},
    {{}, {3, 4}},           {{3, 4}, {}},        {{}, {}},           {{4, 1, 5}, {3, 1}},
    {{2, 3, 4}, {2, 1, 4}}, {{2, 3, 1}, {2, 3, 4}}, {{0, 3}, {3}},   {{64, 33}, {33}},
    {{2, 3, 4, 5}, {3, 1, 5}}, {{37}, {1}},
};

/// The documented conversion: float -> int truncates and saturates (NaN ->
/// 0), int -> int wraps, x -> bool is x != 0, anything -> float rounds.
double referenceCast(DType from, DType to, double v) {
  if (to == DType::Bool)
    return v != 0;
  if (isFloat(to))
    return roundTo(to, v);
  double lo = 0, hi = 0;
  (void)dispatch<kIntTypes>(to, [&](auto t) {
    using T = decltype(t);
    lo = static_cast<double>(std::numeric_limits<T>::min());
    hi = static_cast<double>(std::numeric_limits<T>::max());
  });
  if (isFloat(from)) {
    if (std::isnan(v))
      return 0;
    return std::clamp(std::trunc(v), lo, hi);
  }
  // Integer sources hold small exact values here: wrap modulo 2^bits.
  double wrapped = 0;
  (void)dispatch<kIntTypes>(to, [&](auto t) {
    using T = decltype(t);
    wrapped = static_cast<double>(static_cast<T>(static_cast<int64_t>(v)));
  });
  return wrapped;
}

// --- Binary --------------------------------------------------------------------

class BinaryTest : public ::testing::TestWithParam<DType> {};

double referenceBinary(BinaryKind kind, DType t, double x, double y) {
  switch (kind) {
  case BinaryKind::Add: return x + y;
  case BinaryKind::Sub: return x - y;
  case BinaryKind::Mul: return x * y;
  case BinaryKind::Div: return isFloat(t) ? x / y : std::trunc(x / y);
  case BinaryKind::Pow: return std::pow(x, y);
  case BinaryKind::Max: return std::max(x, y);
  case BinaryKind::Min: return std::min(x, y);
  }
  return 0;
}

TEST_P(BinaryTest, MatchesReferenceOverBroadcastShapes) {
  DType t = GetParam();
  const BinaryKind kinds[] = {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul,
                              BinaryKind::Div, BinaryKind::Max, BinaryKind::Min};
  uint32_t seed = 1;
  for (BinaryKind kind : kinds)
    for (const auto &[aDims, bDims] : kBroadcastCases) {
      SCOPED_TRACE(testing::Message() << "kind " << int(kind) << " a rank " << aDims.size()
                                      << " b rank " << bDims.size());
      Tensor a(t, aDims), b(t, bDims), out(t, broadcastShape(aDims, bDims));
      // Unsigned Sub would wrap (the reference does not): keep b <= a.
      bool noWrap = kind == BinaryKind::Sub && isUnsigned(t);
      fill(a, noWrap ? 4 : -8, 8, seed++);
      fill(b, -8, noWrap ? 4 : 8, seed++, kind == BinaryKind::Div);
      ASSERT_TRUE(binary(kind, a.ref(), b.ref(), out.ref()).isOk());
      std::vector<double> expected(out.size());
      for (int64_t i = 0; i < out.size(); ++i)
        expected[i] = roundTo(t, referenceBinary(kind, t,
                                                 a.get(broadcastSource(i, out.dims, aDims)),
                                                 b.get(broadcastSource(i, out.dims, bDims))));
      expectSameValues(out, expected);
    }
}

TEST_P(BinaryTest, PowMatchesReferenceForEveryExponentType) {
  DType t = GetParam();
  for (DType e : kNumeric) {
    SCOPED_TRACE(dtypeName(e));
    Tensor a(t, {3, 4}), b(e, {4}), out(t, {3, 4});
    fill(a, isFloat(t) ? 0 : -3, 3, 7);
    fill(b, 0, 3, 8);
    ASSERT_TRUE(binary(BinaryKind::Pow, a.ref(), b.ref(), out.ref()).isOk());
    std::vector<double> expected(out.size());
    for (int64_t i = 0; i < out.size(); ++i) {
      double p = std::pow(a.get(i), b.get(i % 4));
      // Integer bases: pow in double, then Cast's conversion (truncation;
      // a negative base to a fractional power is NaN, which becomes 0).
      expected[i] = isFloat(t) ? roundTo(t, p) : referenceCast(DType::F64, t, p);
    }
    expectSameValues(out, expected, isFloat(t) ? tolerance(t) : 0);
  }
}

INSTANTIATE_TEST_SUITE_P(AllNumeric, BinaryTest, ::testing::ValuesIn(kNumeric),
                         [](const auto &info) { return std::string(dtypeName(info.param)); });

TEST(BinaryEdgeTest, SmallBroadcastExactValues) {
  Tensor a(DType::F32, {2, 1}), b(DType::F32, {1, 3}), out(DType::F32, {2, 3});
  a.set(0, 10), a.set(1, 20);
  b.set(0, 1), b.set(1, 2), b.set(2, 3);
  ASSERT_TRUE(binary(BinaryKind::Sub, a.ref(), b.ref(), out.ref()).isOk());
  expectSameValues(out, {9, 8, 7, 19, 18, 17});
}

TEST(BinaryEdgeTest, IntegerDivisionTruncatesTowardZero) {
  Tensor a(DType::I32, {4}), b(DType::I32, {4}), out(DType::I32, {4});
  const double av[] = {-7, 7, -7, 7}, bv[] = {2, -2, -2, 2};
  for (int i = 0; i < 4; ++i)
    a.set(i, av[i]), b.set(i, bv[i]);
  ASSERT_TRUE(binary(BinaryKind::Div, a.ref(), b.ref(), out.ref()).isOk());
  expectSameValues(out, {-3, -3, 3, 3});
}

template <typename T> void expectMinOverMinusOneWraps(DType t) {
  SCOPED_TRACE(dtypeName(t));
  Tensor a(t, {2}), b(t, {}), out(t, {2});
  reinterpret_cast<T *>(a.storage.data())[0] = std::numeric_limits<T>::min();
  reinterpret_cast<T *>(a.storage.data())[1] = 6;
  reinterpret_cast<T *>(b.storage.data())[0] = -1;
  ASSERT_TRUE(binary(BinaryKind::Div, a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_EQ(reinterpret_cast<T *>(out.storage.data())[0], std::numeric_limits<T>::min());
  EXPECT_EQ(reinterpret_cast<T *>(out.storage.data())[1], T(-6));
}

TEST(BinaryEdgeTest, MinOverMinusOneWraps) {
  expectMinOverMinusOneWraps<int8_t>(DType::I8);
  expectMinOverMinusOneWraps<int16_t>(DType::I16);
  expectMinOverMinusOneWraps<int32_t>(DType::I32);
  expectMinOverMinusOneWraps<int64_t>(DType::I64);
}

TEST(BinaryEdgeTest, IntegerOverflowWraps) {
  Tensor a(DType::I32, {1}), out(DType::I32, {1});
  reinterpret_cast<int32_t *>(a.storage.data())[0] = std::numeric_limits<int32_t>::max();
  ASSERT_TRUE(binary(BinaryKind::Add, a.ref(), a.ref(), out.ref()).isOk());
  EXPECT_EQ(reinterpret_cast<int32_t *>(out.storage.data())[0], -2);
  // 65535 * 65535 would overflow int after promotion: must wrap mod 2^16.
  Tensor u(DType::U16, {1}), uOut(DType::U16, {1});
  u.set(0, 65535);
  ASSERT_TRUE(binary(BinaryKind::Mul, u.ref(), u.ref(), uOut.ref()).isOk());
  EXPECT_EQ(uOut.get(0), 1);
}

TEST(BinaryEdgeTest, IntegerDivisionByZeroIsAnError) {
  for (DType t : {DType::I32, DType::U8, DType::I64}) {
    SCOPED_TRACE(dtypeName(t));
    Tensor a(t, {2, 3}), b(t, {3}), out(t, {2, 3});
    fill(a, 1, 5, 3);
    b.set(0, 1), b.set(1, 0), b.set(2, 2);
    Status s = binary(BinaryKind::Div, a.ref(), b.ref(), out.ref());
    ASSERT_FALSE(s.isOk());
    EXPECT_NE(s.message().find("division by zero"), std::string::npos) << s.message();
  }
}

TEST(BinaryEdgeTest, FloatDivisionByZeroIsInfinity) {
  Tensor a(DType::F32, {2}), b(DType::F32, {2}), out(DType::F32, {2});
  a.set(0, 1), a.set(1, -2);
  ASSERT_TRUE(binary(BinaryKind::Div, a.ref(), b.ref(), out.ref()).isOk());
  expectSameValues(out, {INFINITY, -INFINITY});
}

TEST(BinaryEdgeTest, BoolArithmeticAndMismatchedDTypesAreErrors) {
  Tensor a(DType::Bool, {2}), out(DType::Bool, {2});
  EXPECT_FALSE(binary(BinaryKind::Add, a.ref(), a.ref(), out.ref()).isOk());
  Tensor f(DType::F32, {2}), i(DType::I32, {2});
  EXPECT_FALSE(binary(BinaryKind::Add, f.ref(), i.ref(), f.ref()).isOk());
  EXPECT_FALSE(binary(BinaryKind::Pow, f.ref(), a.ref(), f.ref()).isOk());
}

TEST(BinaryEdgeTest, PowExactCases) {
  // Integer base, float exponent: 2 ** 0.5 = 1.41 -> 1; 2 ** -1 = 0.5 -> 0.
  Tensor base(DType::I32, {3}), exponent(DType::F32, {3}), out(DType::I32, {3});
  base.set(0, 2), base.set(1, 2), base.set(2, -3);
  exponent.set(0, 0.5), exponent.set(1, -1), exponent.set(2, 3);
  ASSERT_TRUE(binary(BinaryKind::Pow, base.ref(), exponent.ref(), out.ref()).isOk());
  expectSameValues(out, {1, 0, -27});
  // Float base, scalar exponent 2 (the x * x fast path) and i64 exponent.
  Tensor x(DType::F32, {3}), two(DType::F32, {}), twoInt(DType::I64, {}), y(DType::F32, {3});
  x.set(0, 1.5), x.set(1, -3), x.set(2, 0.1);
  two.set(0, 2), twoInt.set(0, 2);
  const float x2 = 0.1f * 0.1f;
  ASSERT_TRUE(binary(BinaryKind::Pow, x.ref(), two.ref(), y.ref()).isOk());
  expectSameValues(y, {2.25, 9, x2});
  ASSERT_TRUE(binary(BinaryKind::Pow, x.ref(), twoInt.ref(), y.ref()).isOk());
  expectSameValues(y, {2.25, 9, x2});
}

// --- Where -----------------------------------------------------------------------

TEST(WhereTest, MatchesReferenceAcrossDTypesAndShapes) {
  struct Case { std::vector<int64_t> cond, x, y; };
  const Case cases[] = {
      {{2, 3}, {2, 3}, {2, 3}},       {{4, 4}, {2, 3, 4, 4}, {}}, {{2, 1, 4, 4}, {2, 3, 4, 4}, {1}},
      {{}, {3}, {2, 1}},              {{5}, {}, {}},             {{0, 2}, {2}, {2}},
      {{3, 1, 5}, {1, 4, 1}, {4, 5}},
  };
  uint32_t seed = 100;
  for (DType t : kAll)
    for (const Case &c : cases) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " x rank " << c.x.size());
      Tensor cond(DType::Bool, c.cond), x(t, c.x), y(t, c.y);
      Tensor out(t, broadcastShape(broadcastShape(c.cond, c.x), c.y));
      fill(cond, 0, 1, seed++);
      fill(x, -8, 8, seed++);
      fill(y, -8, 8, seed++);
      ASSERT_TRUE(where(cond.ref(), x.ref(), y.ref(), out.ref()).isOk());
      std::vector<double> expected(out.size());
      for (int64_t i = 0; i < out.size(); ++i)
        expected[i] = cond.get(broadcastSource(i, out.dims, c.cond)) != 0
                          ? x.get(broadcastSource(i, out.dims, c.x))
                          : y.get(broadcastSource(i, out.dims, c.y));
      expectSameValues(out, expected);
    }
}

// --- Unary -----------------------------------------------------------------------

double referenceUnary(UnaryKind kind, double x) {
  switch (kind) {
  case UnaryKind::Neg: return -x;
  case UnaryKind::Relu: return x < 0 ? 0 : x;
  case UnaryKind::Exp: return std::exp(x);
  case UnaryKind::Log: return std::log(x);
  case UnaryKind::Sqrt: return std::sqrt(x);
  case UnaryKind::Erf: return std::erf(x);
  case UnaryKind::Tanh: return std::tanh(x);
  case UnaryKind::Sigmoid: return 1 / (1 + std::exp(-x));
  case UnaryKind::Not: return x == 0;
  }
  return 0;
}

TEST(UnaryTest, FloatKindsMatchReference) {
  const UnaryKind kinds[] = {UnaryKind::Neg, UnaryKind::Relu, UnaryKind::Exp,  UnaryKind::Log,
                             UnaryKind::Sqrt, UnaryKind::Erf, UnaryKind::Tanh, UnaryKind::Sigmoid};
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (UnaryKind kind : kinds) {
      SCOPED_TRACE(testing::Message() << dtypeName(t) << " kind " << int(kind));
      bool positive = kind == UnaryKind::Log || kind == UnaryKind::Sqrt;
      Tensor in(t, {7, 9}), out(t, {7, 9});
      fill(in, positive ? 0 : -4, 4, 11, positive);
      ASSERT_TRUE(unary(kind, in.ref(), out.ref()).isOk());
      std::vector<double> expected(out.size());
      for (int64_t i = 0; i < out.size(); ++i)
        expected[i] = roundTo(t, referenceUnary(kind, in.get(i)));
      bool exact = kind == UnaryKind::Neg || kind == UnaryKind::Relu;
      expectSameValues(out, expected, exact ? 0 : tolerance(t));
    }
}

TEST(UnaryTest, SignedIntegersNegAndRelu) {
  for (DType t : {DType::I8, DType::I16, DType::I32, DType::I64})
    for (UnaryKind kind : {UnaryKind::Neg, UnaryKind::Relu}) {
      Tensor in(t, {3, 5}), out(t, {3, 5});
      fill(in, -8, 8, 5);
      ASSERT_TRUE(unary(kind, in.ref(), out.ref()).isOk());
      std::vector<double> expected(out.size());
      for (int64_t i = 0; i < out.size(); ++i)
        expected[i] = referenceUnary(kind, in.get(i));
      expectSameValues(out, expected);
    }
  Tensor m(DType::I32, {1}), out(DType::I32, {1});
  reinterpret_cast<int32_t *>(m.storage.data())[0] = std::numeric_limits<int32_t>::min();
  ASSERT_TRUE(unary(UnaryKind::Neg, m.ref(), out.ref()).isOk());
  EXPECT_EQ(reinterpret_cast<int32_t *>(out.storage.data())[0], std::numeric_limits<int32_t>::min());
}

TEST(UnaryTest, ReluKeepsNaNAndSigmoidSaturates) {
  Tensor in(DType::F32, {3}), out(DType::F32, {3});
  in.set(0, NAN), in.set(1, -1), in.set(2, 2);
  ASSERT_TRUE(unary(UnaryKind::Relu, in.ref(), out.ref()).isOk());
  expectSameValues(out, {NAN, 0, 2});
  in.set(0, -200), in.set(1, 0), in.set(2, 200);
  ASSERT_TRUE(unary(UnaryKind::Sigmoid, in.ref(), out.ref()).isOk());
  expectSameValues(out, {0, 0.5, 1});
}

TEST(UnaryTest, NotAndUnsupportedCombinations) {
  Tensor b(DType::Bool, {4}), out(DType::Bool, {4});
  b.set(0, 1), b.set(2, 1);
  ASSERT_TRUE(unary(UnaryKind::Not, b.ref(), out.ref()).isOk());
  expectSameValues(out, {0, 1, 0, 1});
  Tensor i(DType::I32, {2}), u(DType::U8, {2}), f(DType::F32, {2});
  EXPECT_FALSE(unary(UnaryKind::Exp, i.ref(), i.ref()).isOk());
  EXPECT_FALSE(unary(UnaryKind::Neg, u.ref(), u.ref()).isOk());
  EXPECT_FALSE(unary(UnaryKind::Not, f.ref(), f.ref()).isOk());
  EXPECT_FALSE(unary(UnaryKind::Relu, b.ref(), b.ref()).isOk());
}

// --- Cast --------------------------------------------------------------------------

TEST(CastTest, EveryPairMatchesReference) {
  for (DType from : kAll)
    for (DType to : kAll) {
      SCOPED_TRACE(testing::Message() << dtypeName(from) << " -> " << dtypeName(to));
      Tensor in(from, {5, 7}), out(to, {5, 7});
      fill(in, -9, 9, 21);
      ASSERT_TRUE(cast(in.ref(), out.ref()).isOk());
      std::vector<double> expected(out.size());
      for (int64_t i = 0; i < out.size(); ++i)
        expected[i] = referenceCast(from, to, in.get(i));
      expectSameValues(out, expected);
    }
}

TEST(CastTest, FloatToIntegerEdgeCases) {
  Tensor in(DType::F32, {8}), i32(DType::I32, {8}), u8(DType::U8, {8}), i64(DType::I64, {8});
  const double values[] = {NAN, 1e10, -1e10, -1.5, 3.9, -3.9, INFINITY, 255.5};
  for (int i = 0; i < 8; ++i)
    in.set(i, values[i]);
  ASSERT_TRUE(cast(in.ref(), i32.ref()).isOk());
  ASSERT_TRUE(cast(in.ref(), u8.ref()).isOk());
  ASSERT_TRUE(cast(in.ref(), i64.ref()).isOk());
  expectSameValues(i32, {0, 2147483647, -2147483648.0, -1, 3, -3, 2147483647, 255});
  expectSameValues(u8, {0, 255, 0, 0, 3, 0, 255, 255});
  expectSameValues(i64, {0, 1e10, -1e10, -1, 3, -3, 9223372036854775807.0, 255});
  EXPECT_EQ(reinterpret_cast<int64_t *>(i64.storage.data())[6],
            std::numeric_limits<int64_t>::max());
}

TEST(CastTest, BoolAndHalfConversions) {
  Tensor in(DType::F32, {4}), b(DType::Bool, {4}), bf(DType::BF16, {4});
  in.set(0, -0.0), in.set(1, 0.5), in.set(2, NAN), in.set(3, 1.0 + 1.0 / 256); // bf16 tie
  ASSERT_TRUE(cast(in.ref(), b.ref()).isOk());
  expectSameValues(b, {0, 1, 1, 1});
  ASSERT_TRUE(cast(in.ref(), bf.ref()).isOk());
  expectSameValues(bf, {0, 0.5, NAN, 1.0});
  Tensor big(DType::I64, {1}), f(DType::F32, {1});
  reinterpret_cast<int64_t *>(big.storage.data())[0] = (int64_t(1) << 40) + 1;
  ASSERT_TRUE(cast(big.ref(), f.ref()).isOk());
  EXPECT_EQ(f.get(0), std::ldexp(1.0, 40));
}

// --- Half.h ------------------------------------------------------------------------

float bitsFloat(uint32_t b) {
  float f;
  std::memcpy(&f, &b, 4);
  return f;
}

TEST(HalfTest, Bf16RoundsHalfwayToEven) {
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f808000u)), 0x3f80u); // tie, even below
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f818000u)), 0x3f82u); // tie, even above
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f808001u)), 0x3f81u); // just above the tie
  EXPECT_EQ(floatToBf16(bitsFloat(0x3f807fffu)), 0x3f80u); // just below
  EXPECT_EQ(floatToBf16(bitsFloat(0xbf818000u)), 0xbf82u); // sign is symmetric
}

TEST(HalfTest, Bf16SpecialValues) {
  EXPECT_EQ(floatToBf16(bitsFloat(0x7f7fffffu)), 0x7f80u); // FLT_MAX rounds to inf
  EXPECT_EQ(floatToBf16(INFINITY), 0x7f80u);
  EXPECT_EQ(floatToBf16(-INFINITY), 0xff80u);
  uint16_t nan = floatToBf16(bitsFloat(0x7f800001u)); // payload in the low bits
  EXPECT_TRUE(std::isnan(bf16ToFloat(nan)));
  EXPECT_EQ(floatToBf16(-0.0f), 0x8000u);
}

TEST(HalfTest, RoundTripsEveryNonNaNPattern) {
  for (uint32_t h = 0; h < 0x10000u; ++h) {
    uint16_t bits = static_cast<uint16_t>(h);
    float bf = bf16ToFloat(bits), f16 = f16ToFloat(bits);
    if (!std::isnan(bf))
      EXPECT_EQ(floatToBf16(bf), bits) << std::hex << h;
    else
      EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(bf))));
    if (!std::isnan(f16))
      EXPECT_EQ(floatToF16(f16), bits) << std::hex << h;
    else
      EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(f16))));
  }
}

TEST(HalfTest, F16ExactValuesSubnormalsAndOverflow) {
  EXPECT_EQ(floatToF16(1.0f), 0x3c00u);
  EXPECT_EQ(floatToF16(65504.0f), 0x7bffu);
  EXPECT_EQ(floatToF16(65519.0f), 0x7bffu);
  EXPECT_EQ(floatToF16(65520.0f), 0x7c00u); // the tie rounds to even: infinity
  EXPECT_EQ(floatToF16(1e9f), 0x7c00u);
  EXPECT_EQ(floatToF16(-1e9f), 0xfc00u);
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -24)), 0x0001u);        // smallest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -25)), 0x0000u);        // tie to even: zero
  EXPECT_EQ(floatToF16(std::ldexp(3.0f, -25)), 0x0002u);        // tie to even: 2
  EXPECT_EQ(floatToF16(std::ldexp(1023.0f, -24)), 0x03ffu);     // largest subnormal
  EXPECT_EQ(floatToF16(std::ldexp(1023.5f, -24)), 0x0400u);     // ties up into normals
  EXPECT_EQ(floatToF16(std::ldexp(1.0f, -14)), 0x0400u);        // smallest normal
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(1.0f, -11)), 0x3c00u); // tie, even below
  EXPECT_EQ(floatToF16(1.0f + std::ldexp(3.0f, -11)), 0x3c02u); // tie, even above
  EXPECT_EQ(floatToF16(-0.0f), 0x8000u);
  EXPECT_EQ(f16ToFloat(0x0001u), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16ToFloat(0x7c00u), INFINITY);
  EXPECT_EQ(f16ToFloat(0xfc00u), -INFINITY);
  EXPECT_TRUE(std::isnan(f16ToFloat(0x7e00u)));
  EXPECT_TRUE(std::isnan(f16ToFloat(floatToF16(NAN))));
}

/// Independent reference: the nearest of all finite f16 values (plus
/// 65536 standing for infinity), ties to the even bit pattern.
uint16_t nearestF16(float f, const std::vector<std::pair<double, uint16_t>> &table) {
  double a = std::fabs(static_cast<double>(f));
  auto it = std::lower_bound(table.begin(), table.end(), std::make_pair(a, uint16_t(0)));
  uint16_t sign = std::signbit(f) ? 0x8000u : 0;
  if (it == table.end())
    return sign | 0x7c00u;
  if (it == table.begin() || it->first == a)
    return sign | it->second;
  auto below = it - 1;
  double dHi = it->first - a, dLo = a - below->first;
  if (dLo < dHi || (dLo == dHi && (below->second & 1) == 0))
    return sign | below->second;
  return sign | it->second;
}

TEST(HalfTest, F16MatchesNearestValueReference) {
  std::vector<std::pair<double, uint16_t>> table;
  for (uint32_t h = 0; h < 0x7c00u; ++h)
    table.emplace_back(f16ToFloat(static_cast<uint16_t>(h)), static_cast<uint16_t>(h));
  table.emplace_back(65536.0, 0x7c00u);
  std::mt19937 rng(42);
  for (int i = 0; i < 200000; ++i) {
    // Exponents around f16's range, so subnormals, normals and overflow all occur.
    float f = bitsFloat((rng() & 0x80000000u) | ((rng() % 48 + 97) << 23) | (rng() & 0x7fffffu));
    ASSERT_EQ(floatToF16(f), nearestF16(f, table)) << std::hexfloat << f;
  }
}

} // namespace
