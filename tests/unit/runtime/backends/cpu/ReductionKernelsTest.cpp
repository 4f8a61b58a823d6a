//===- ReductionKernelsTest.cpp - sum/max/mean vs a naive reference -------===//
//
// Checks reduce over every subset of axes (with and without kept size-1
// dims in the result shape) for floats and integers against a reference
// written here, the summation order the kernel documents (bit for bit, as
// later stages rely on it), NaN propagation of max, empty reductions, and
// argument errors.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::numElements;

/// A test tensor with this test's random fill.
struct Buffer : kerneltest::TestTensor {
  using TestTensor::TestTensor;
  /// Uniform reals in [-2, 2) for floats, integers in [lo, hi] otherwise.
  void fillRandom(uint32_t seed, int lo = -50, int hi = 50) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> real(-2.0, 2.0);
    std::uniform_int_distribution<int> integer(lo, hi);
    for (int64_t i = 0; i < size(); ++i)
      set(i, isFloat(dtype) ? real(rng) : integer(rng));
  }
};

const char *kindName(ReduceKind kind) {
  return kind == ReduceKind::Sum ? "sum" : kind == ReduceKind::Max ? "max" : "mean";
}

/// The reduction in double (integer mean truncates toward zero), over the
/// kept dims in row-major order.
std::vector<double> refReduce(ReduceKind kind, const Buffer &in, const Dims &dims,
                              const std::vector<int64_t> &axes, bool integer) {
  std::vector<bool> reduced(dims.size(), false);
  for (int64_t a : axes)
    reduced[a] = true;
  Dims keptDims;
  int64_t count = 1;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (reduced[d])
      count *= dims[d];
    else
      keptDims.push_back(dims[d]);
  }
  std::vector<double> acc(numElements(keptDims),
                          kind == ReduceKind::Max ? -INFINITY : 0.0);
  for (int64_t flat = 0; flat < in.size(); ++flat) {
    int64_t rest = flat, outIndex = 0, outScale = 1;
    for (size_t d = dims.size(); d-- > 0;) {
      const int64_t coord = rest % dims[d];
      rest /= dims[d];
      if (!reduced[d]) {
        outIndex += coord * outScale;
        outScale *= dims[d];
      }
    }
    const double v = in.get(flat);
    acc[outIndex] = kind == ReduceKind::Max ? std::max(acc[outIndex], v) : acc[outIndex] + v;
  }
  if (kind == ReduceKind::Mean)
    for (double &v : acc)
      v = integer ? std::trunc(v / count) : v / count;
  return acc;
}

void checkReduce(DType dtype, ReduceKind kind, const Dims &dims, const std::vector<int64_t> &axes,
                 bool keepdims) {
  Buffer in(dtype, dims);
  in.fillRandom(static_cast<uint32_t>(axes.size() * 7 + dims.size()));
  Dims outDims;
  for (size_t d = 0; d < dims.size(); ++d) {
    const bool isReduced = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    if (!isReduced)
      outDims.push_back(dims[d]);
    else if (keepdims)
      outDims.push_back(1);
  }
  Buffer out(dtype, outDims);
  const Status status =
      reduce(kind, in.ref(), axes.data(), static_cast<int>(axes.size()), out.ref());
  ASSERT_TRUE(status.isOk()) << status.message();
  const bool integer = !isFloat(dtype);
  const std::vector<double> expected = refReduce(kind, in, dims, axes, integer);
  ASSERT_EQ(static_cast<int64_t>(expected.size()), out.size());
  const double tol = dtype == DType::F32 ? 1e-5 : dtype == DType::F64 ? 1e-12
                     : dtype == DType::F16 ? 2e-3 : dtype == DType::BF16 ? 1.6e-2 : 0.0;
  std::string axesText;
  for (int64_t a : axes)
    axesText += std::to_string(a) + " ";
  for (int64_t i = 0; i < out.size(); ++i)
    ASSERT_NEAR(out.get(i), expected[i], tol * std::max(1.0, std::abs(expected[i])))
        << dtypeName(dtype) << " " << kindName(kind) << " rank " << dims.size() << " axes { "
        << axesText << "} keepdims " << keepdims << " at " << i;
}

/// Every subset of the axes of `dims`, as sorted lists.
std::vector<std::vector<int64_t>> axisSubsets(size_t rank) {
  std::vector<std::vector<int64_t>> subsets;
  for (uint32_t mask = 0; mask < (1u << rank); ++mask) {
    std::vector<int64_t> axes;
    for (size_t d = 0; d < rank; ++d)
      if (mask & (1u << d))
        axes.push_back(static_cast<int64_t>(d));
    subsets.push_back(axes);
  }
  return subsets;
}

const ReduceKind kKinds[] = {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Mean};

TEST(ReductionKernels, EveryAxisSubset) {
  const std::vector<Dims> shapes = {{3, 4, 5}, {2, 1, 3, 40}, {37}};
  for (DType dtype : {DType::F32, DType::F64, DType::I32, DType::I64})
    for (const Dims &dims : shapes)
      for (const auto &axes : axisSubsets(dims.size()))
        for (ReduceKind kind : kKinds)
          for (bool keepdims : {true, false})
            checkReduce(dtype, kind, dims, axes, keepdims);
}

TEST(ReductionKernels, SixteenBitFloats) {
  for (DType dtype : {DType::F16, DType::BF16})
    for (const auto &axes : axisSubsets(3))
      for (ReduceKind kind : kKinds)
        checkReduce(dtype, kind, {3, 4, 5}, axes, true);
}

TEST(ReductionKernels, LargeLeadingAndTrailing) {
  for (ReduceKind kind : kKinds) {
    checkReduce(DType::F32, kind, {3, 1000}, {1}, false); // runs of 1000
    checkReduce(DType::F32, kind, {1000, 300}, {0}, true); // 300 columns > one chunk
    checkReduce(DType::F32, kind, {7, 50, 9}, {1}, false); // a middle axis
    checkReduce(DType::F32, kind, {7, 50, 9}, {0, 2}, false);
  }
}

TEST(ReductionKernels, IntegerSumWrapsAndMeanTruncates) {
  Buffer bytes(DType::U8, {4}), byteSum(DType::U8, {});
  for (int i = 0; i < 4; ++i)
    bytes.set(i, 200);
  const int64_t axis0 = 0;
  ASSERT_TRUE(reduce(ReduceKind::Sum, bytes.ref(), &axis0, 1, byteSum.ref()).isOk());
  EXPECT_EQ(byteSum.get(0), 800 % 256);

  Buffer ints(DType::I32, {2, 2}), mean(DType::I32, {2});
  const double values[] = {-3, -4, 3, 4};
  for (int i = 0; i < 4; ++i)
    ints.set(i, values[i]);
  const int64_t axis1 = 1;
  ASSERT_TRUE(reduce(ReduceKind::Mean, ints.ref(), &axis1, 1, mean.ref()).isOk());
  EXPECT_EQ(mean.get(0), -3); // -7 / 2 truncates toward zero
  EXPECT_EQ(mean.get(1), 3);
}

/// A piece of a run as the kernel documents it: 16 lanes by position mod
/// 16, combined by halving.
float lanePiece(const float *p, int64_t n) {
  float lanes[16] = {};
  for (int64_t i = 0; i < n; ++i)
    lanes[i % 16] += p[i];
  for (int width = 8; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l)
      lanes[l] += lanes[l + width];
  return lanes[0];
}

TEST(ReductionKernels, DocumentedSummationOrder) {
  // Innermost dim reduced: pieces of 1024, each by lanes, added in order.
  const int64_t rows = 2, len = 2500;
  Buffer runs(DType::F32, {rows, len}), runsOut(DType::F32, {rows});
  runs.fillRandom(5);
  const int64_t lastAxis = 1;
  ASSERT_TRUE(reduce(ReduceKind::Sum, runs.ref(), &lastAxis, 1, runsOut.ref()).isOk());
  for (int64_t r = 0; r < rows; ++r) {
    float total = 0;
    for (int64_t start = 0; start < len; start += 1024)
      total += lanePiece(runs.as<float>() + r * len + start, std::min<int64_t>(1024, len - start));
    EXPECT_EQ(runsOut.as<float>()[r], total) << "row " << r;
  }
  // Innermost dim kept: terms in row-major order, in blocks of 64.
  const int64_t n = 777, cols = 3;
  Buffer columns(DType::F32, {n, cols}), columnsOut(DType::F32, {cols});
  columns.fillRandom(6);
  const int64_t firstAxis = 0;
  ASSERT_TRUE(reduce(ReduceKind::Sum, columns.ref(), &firstAxis, 1, columnsOut.ref()).isOk());
  for (int64_t c = 0; c < cols; ++c) {
    float total = 0, partial = 0;
    for (int64_t i = 0; i < n; ++i) {
      partial += columns.as<float>()[i * cols + c];
      if ((i + 1) % 64 == 0) {
        total += partial;
        partial = 0;
      }
    }
    total += partial;
    EXPECT_EQ(columnsOut.as<float>()[c], total) << "column " << c;
  }
}

TEST(ReductionKernels, MaxPropagatesNaN) {
  for (int64_t axis : {0, 1}) {
    Buffer in(DType::F32, {40, 40}), out(DType::F32, {40});
    in.fillRandom(7);
    in.set(5 * 40 + 5, NAN);
    ASSERT_TRUE(reduce(ReduceKind::Max, in.ref(), &axis, 1, out.ref()).isOk());
    for (int64_t i = 0; i < 40; ++i)
      EXPECT_EQ(std::isnan(out.get(i)), i == 5) << "axis " << axis << " output " << i;
  }
}

TEST(ReductionKernels, EmptyReductions) {
  Buffer in(DType::F32, {0, 3}), out(DType::F32, {3});
  const int64_t axis = 0;
  ASSERT_TRUE(reduce(ReduceKind::Sum, in.ref(), &axis, 1, out.ref()).isOk());
  EXPECT_EQ(out.get(0), 0);
  ASSERT_TRUE(reduce(ReduceKind::Max, in.ref(), &axis, 1, out.ref()).isOk());
  EXPECT_EQ(out.get(1), -INFINITY);
  ASSERT_TRUE(reduce(ReduceKind::Mean, in.ref(), &axis, 1, out.ref()).isOk());
  EXPECT_TRUE(std::isnan(out.get(2)));
  Buffer ints(DType::I32, {0, 3}), intOut(DType::I32, {3});
  EXPECT_FALSE(reduce(ReduceKind::Mean, ints.ref(), &axis, 1, intOut.ref()).isOk());
  ASSERT_TRUE(reduce(ReduceKind::Max, ints.ref(), &axis, 1, intOut.ref()).isOk());
  EXPECT_EQ(intOut.get(0), std::numeric_limits<int32_t>::lowest());
}

TEST(ReductionKernels, Errors) {
  Buffer in(DType::F32, {2, 3}), out(DType::F32, {1}), wrong(DType::F32, {3});
  const int64_t unsorted[] = {1, 0}, outside[] = {2}, all[] = {0, 1};
  EXPECT_FALSE(reduce(ReduceKind::Sum, in.ref(), unsorted, 2, out.ref()).isOk());
  EXPECT_FALSE(reduce(ReduceKind::Sum, in.ref(), outside, 1, out.ref()).isOk());
  EXPECT_FALSE(reduce(ReduceKind::Sum, in.ref(), all, 2, wrong.ref()).isOk());
  Buffer bools(DType::Bool, {2, 3}), boolOut(DType::Bool, {1});
  EXPECT_FALSE(reduce(ReduceKind::Sum, bools.ref(), all, 2, boolOut.ref()).isOk());
}

} // namespace
