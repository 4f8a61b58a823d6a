//===- LinearAlgebraKernelsTest.cpp - matmul and gemm vs a naive reference -------===//
//
// Checks the CPU matmul and gemm kernels against a double-precision numpy
// reference written here: 1-D promotion, batch broadcasting (including the
// folded "[B, M, K] @ [K, N]" path), an empty contraction, every transpose
// combination and bias shape of gemm, the naive path of 16-bit floats and
// integers (exact on integers, including wrap-around), and dtype errors.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::numElements;

/// A test tensor with this test's random fill.
struct Buffer : kerneltest::TestTensor {
  using TestTensor::TestTensor;
  /// Fills with uniform values in [-1, 1), or small integers (exact in
  /// every dtype here, so integer and 16-bit results are exact sums).
  void fillRandom(uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> real(-1.0, 1.0);
    std::uniform_int_distribution<int> small(dtype == DType::U8 ? 0 : -4, 4);
    const bool exact = !isFloat(dtype) || dtype == DType::F16 || dtype == DType::BF16;
    for (int64_t i = 0; i < size(); ++i)
      set(i, exact ? small(rng) : real(rng));
  }
};

/// Relative tolerance of a result stored in `dtype` (one rounding for the
/// 16-bit floats, whose inputs here are small integers).
double tolerance(DType dtype) {
  switch (dtype) {
  case DType::F32: return 1e-5;
  case DType::F64: return 1e-12;
  case DType::F16: return 1e-3;
  case DType::BF16: return 8e-3;
  default: return 0;
  }
}

void expectClose(const std::vector<double> &expected, const Buffer &got, DType dtype,
                 const std::string &what) {
  ASSERT_EQ(static_cast<int64_t>(expected.size()), got.size()) << what;
  const double tol = tolerance(dtype);
  for (int64_t i = 0; i < got.size(); ++i)
    ASSERT_NEAR(got.get(i), expected[i], tol * std::max(1.0, std::abs(expected[i])))
        << what << " at " << i;
}

/// numpy.matmul in double; sets outDims.
std::vector<double> refMatmul(Dims aDims, const std::vector<double> &a, Dims bDims,
                              const std::vector<double> &b, Dims &outDims) {
  const bool aVec = aDims.size() == 1, bVec = bDims.size() == 1;
  if (aVec)
    aDims.insert(aDims.begin(), 1);
  if (bVec)
    bDims.push_back(1);
  const int64_t m = aDims[aDims.size() - 2], k = aDims.back(), n = bDims.back();
  const Dims aBatch(aDims.begin(), aDims.end() - 2), bBatch(bDims.begin(), bDims.end() - 2);
  const size_t rank = std::max(aBatch.size(), bBatch.size());
  // Right-aligned broadcast of the batch dims.
  auto dimAt = [&](const Dims &d, size_t i) {
    const size_t shift = rank - d.size();
    return i < shift ? int64_t{1} : d[i - shift];
  };
  Dims batch(rank);
  for (size_t i = 0; i < rank; ++i)
    batch[i] = std::max(dimAt(aBatch, i), dimAt(bBatch, i));
  outDims = batch;
  if (!aVec)
    outDims.push_back(m);
  if (!bVec)
    outDims.push_back(n);
  std::vector<double> out;
  const int64_t batches = numElements(batch);
  for (int64_t flat = 0; flat < batches; ++flat) {
    // Map the batch index into each operand (size-1 dims broadcast).
    int64_t rest = flat, aIndex = 0, bIndex = 0, aScale = 1, bScale = 1;
    for (size_t i = rank; i-- > 0;) {
      const int64_t idx = rest % batch[i];
      rest /= batch[i];
      const int64_t ad = dimAt(aBatch, i), bd = dimAt(bBatch, i);
      aIndex += (ad == 1 ? 0 : idx) * aScale;
      bIndex += (bd == 1 ? 0 : idx) * bScale;
      aScale *= ad;
      bScale *= bd;
    }
    for (int64_t i = 0; i < m; ++i)
      for (int64_t j = 0; j < n; ++j) {
        double sum = 0;
        for (int64_t kk = 0; kk < k; ++kk)
          sum += a[aIndex * m * k + i * k + kk] * b[bIndex * k * n + kk * n + j];
        out.push_back(sum);
      }
  }
  return out;
}

void checkMatmul(DType dtype, const Dims &aDims, const Dims &bDims) {
  Buffer a(dtype, aDims), b(dtype, bDims);
  a.fillRandom(1);
  b.fillRandom(2);
  Dims outDims;
  std::vector<double> expected = refMatmul(aDims, a.values(), bDims, b.values(), outDims);
  Buffer out(dtype, outDims);
  if (!isFloat(dtype)) // integer results wrap to their width
    for (int64_t i = 0; i < out.size(); ++i) {
      out.set(i, expected[i]);
      expected[i] = out.get(i);
    }
  const Status status = matmul(a.ref(), b.ref(), out.ref());
  ASSERT_TRUE(status.isOk()) << status.message();
  expectClose(expected, out, dtype,
              std::string(dtypeName(dtype)) + " matmul of ranks " + std::to_string(aDims.size()) +
                  " and " + std::to_string(bDims.size()));
}

const std::vector<std::pair<Dims, Dims>> kMatmulShapes = {
    {{3, 4}, {4, 5}},       {{4}, {4, 5}},             {{3, 4}, {4}},
    {{4}, {4}},             {{2, 3, 4}, {4, 5}},       {{3, 4}, {2, 4, 5}},
    {{2, 1, 3, 4}, {1, 5, 4, 6}}, {{2, 3, 4}, {4}},    {{5}, {2, 5, 3}},
    {{2, 3, 4}, {2, 4, 5}}, {{1, 3, 4}, {2, 4, 5}},    {{7, 1, 33, 70}, {1, 3, 70, 17}},
    {{3, 5}, {5, 300}},     {{2, 2, 3, 4}, {2, 1, 4, 2}},
};

TEST(LinearAlgebraKernels, BlasTypesMatchReference) {
  for (DType dtype : {DType::F32, DType::F64})
    for (const auto &[aDims, bDims] : kMatmulShapes)
      checkMatmul(dtype, aDims, bDims);
}

TEST(LinearAlgebraKernels, NaiveTypesMatchReference) {
  for (DType dtype : {DType::F16, DType::BF16, DType::I32, DType::I64, DType::U8})
    for (const auto &[aDims, bDims] : kMatmulShapes)
      checkMatmul(dtype, aDims, bDims);
}

TEST(LinearAlgebraKernels, IntegersWrapAround) {
  // 100 * 100 + 100 * 100 = 20000 = 78 * 256 + 32.
  Buffer a(DType::I8, {1, 2}), b(DType::I8, {2, 1}), out(DType::I8, {1, 1});
  for (int i = 0; i < 2; ++i) {
    a.set(i, 100);
    b.set(i, 100);
  }
  ASSERT_TRUE(matmul(a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_EQ(out.get(0), 32);
}

TEST(LinearAlgebraKernels, TransposedRhsMatchesExplicitTranspose) {
  // [2, 5, 3] @ W^T with W [4, 3] (a Linear weight), f32 through BLAS and
  // i32 through the naive loop, against the product with W^T materialized.
  for (DType dtype : {DType::F32, DType::I32}) {
    Buffer a(dtype, {2, 5, 3}), w(dtype, {4, 3}), wt(dtype, {3, 4});
    Buffer out(dtype, {2, 5, 4}), expected(dtype, {2, 5, 4});
    a.fillRandom(11);
    w.fillRandom(12);
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 3; ++c)
        wt.set(c * 4 + r, w.get(r * 3 + c));
    ASSERT_TRUE(matmul(a.ref(), w.ref(), out.ref(), /*transA=*/false, /*transB=*/true).isOk());
    ASSERT_TRUE(matmul(a.ref(), wt.ref(), expected.ref()).isOk());
    for (int64_t i = 0; i < out.size(); ++i)
      EXPECT_NEAR(out.get(i), expected.get(i), 1e-5) << dtypeName(dtype) << " element " << i;
  }
  Buffer a(DType::F32, {5, 3}), w(DType::F32, {4, 2}), out(DType::F32, {5, 4});
  EXPECT_FALSE(matmul(a.ref(), w.ref(), out.ref(), false, true).isOk()); // k mismatch
}

TEST(LinearAlgebraKernels, BatchedOperandsReadTransposedInPlace) {
  // [2, 3, 5]^T @ [2, 4, 3]^T: both operands stored with their last two dims
  // swapped (as a backward pass's transposed activations are), f32 through
  // BLAS and i32 through the naive loop, against materialized transposes.
  for (DType dtype : {DType::F32, DType::I32}) {
    Buffer at(dtype, {2, 3, 5}), bt(dtype, {2, 4, 3}), a(dtype, {2, 5, 3}), b(dtype, {2, 3, 4});
    Buffer out(dtype, {2, 5, 4}), expected(dtype, {2, 5, 4}), halfOut(dtype, {2, 5, 4});
    at.fillRandom(21);
    bt.fillRandom(22);
    for (int64_t n = 0; n < 2; ++n)
      for (int64_t r = 0; r < 3; ++r) {
        for (int64_t c = 0; c < 5; ++c)
          a.set(n * 15 + c * 3 + r, at.get(n * 15 + r * 5 + c));
        for (int64_t c = 0; c < 4; ++c)
          b.set(n * 12 + r * 4 + c, bt.get(n * 12 + c * 3 + r));
      }
    ASSERT_TRUE(matmul(at.ref(), bt.ref(), out.ref(), true, true).isOk());
    ASSERT_TRUE(matmul(a.ref(), b.ref(), expected.ref()).isOk());
    ASSERT_TRUE(matmul(at.ref(), b.ref(), halfOut.ref(), true, false).isOk());
    for (int64_t i = 0; i < out.size(); ++i) {
      EXPECT_NEAR(out.get(i), expected.get(i), 1e-5) << dtypeName(dtype) << " element " << i;
      EXPECT_NEAR(halfOut.get(i), expected.get(i), 1e-5) << dtypeName(dtype) << " element " << i;
    }
  }
  // A shared rhs does not fold the batch into rows when the lhs is transposed.
  Buffer at(DType::F32, {3, 4, 2}), w(DType::F32, {4, 5}), out(DType::F32, {3, 2, 5});
  Buffer a(DType::F32, {3, 2, 4}), expected(DType::F32, {3, 2, 5});
  at.fillRandom(23);
  w.fillRandom(24);
  for (int64_t n = 0; n < 3; ++n)
    for (int64_t r = 0; r < 4; ++r)
      for (int64_t c = 0; c < 2; ++c)
        a.set(n * 8 + c * 4 + r, at.get(n * 8 + r * 2 + c));
  ASSERT_TRUE(matmul(at.ref(), w.ref(), out.ref(), true, false).isOk());
  ASSERT_TRUE(matmul(a.ref(), w.ref(), expected.ref()).isOk());
  for (int64_t i = 0; i < out.size(); ++i)
    EXPECT_NEAR(out.get(i), expected.get(i), 1e-5) << "element " << i;
}

TEST(LinearAlgebraKernels, EmptyContractionGivesZeros) {
  for (DType dtype : {DType::F32, DType::I32}) {
    Buffer a(dtype, {3, 0}), b(dtype, {0, 4}), out(dtype, {3, 4});
    for (int64_t i = 0; i < out.size(); ++i)
      out.set(i, 7);
    ASSERT_TRUE(matmul(a.ref(), b.ref(), out.ref()).isOk());
    for (int64_t i = 0; i < out.size(); ++i)
      EXPECT_EQ(out.get(i), 0) << dtypeName(dtype);
  }
}

TEST(LinearAlgebraKernels, ShapesThatDoNotFitAreErrors) {
  // Each would read or write beyond a buffer if it were run.
  Buffer a(DType::F32, {2, 3}), b(DType::F32, {3, 2}), out(DType::F32, {2, 2});
  Buffer tall(DType::F32, {3, 2}), batched(DType::F32, {3, 2, 3}), out3(DType::F32, {2, 2, 2});
  EXPECT_TRUE(matmul(a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_FALSE(matmul(a.ref(), b.ref(), tall.ref()).isOk());       // result not m x n
  EXPECT_FALSE(matmul(batched.ref(), b.ref(), out3.ref()).isOk()); // batch 3 vs 2
  Buffer wideB(DType::F32, {4, 2});
  EXPECT_FALSE(gemm(a.ref(), wideB.ref(), nullptr, 1, 0, false, false, out.ref()).isOk());
  EXPECT_FALSE(gemm(a.ref(), b.ref(), nullptr, 1, 0, false, false, tall.ref()).isOk());
  Buffer row3(DType::F32, {3}), column(DType::F32, {2, 1});
  TensorRef row3Ref = row3.ref(), columnRef = column.ref();
  EXPECT_FALSE(gemm(a.ref(), b.ref(), &row3Ref, 1, 1, false, false, out.ref()).isOk());
  EXPECT_TRUE(gemm(a.ref(), b.ref(), &columnRef, 1, 1, false, false, out.ref()).isOk());
}

TEST(LinearAlgebraKernels, MismatchedDTypesAreErrors) {
  Buffer a(DType::F32, {2, 2}), b(DType::F64, {2, 2}), out(DType::F32, {2, 2});
  EXPECT_FALSE(matmul(a.ref(), b.ref(), out.ref()).isOk());
  EXPECT_FALSE(gemm(a.ref(), b.ref(), nullptr, 1, 1, false, false, out.ref()).isOk());
  Buffer bools(DType::Bool, {2, 2});
  EXPECT_FALSE(matmul(bools.ref(), bools.ref(), bools.ref()).isOk());
}

/// alpha * op(a) @ op(b) + beta * c in double, c broadcast from cDims.
std::vector<double> refGemm(const Buffer &a, const Buffer &b, const Buffer *c, const Dims &cDims,
                            double alpha, double beta, bool transA, bool transB, int64_t m,
                            int64_t n, int64_t k) {
  std::vector<double> out(m * n);
  for (int64_t i = 0; i < m; ++i)
    for (int64_t j = 0; j < n; ++j) {
      double sum = 0;
      for (int64_t kk = 0; kk < k; ++kk)
        sum += a.get(transA ? kk * m + i : i * k + kk) * b.get(transB ? j * k + kk : kk * n + j);
      double bias = 0;
      if (c) {
        // cDims right-aligned against [m, n]; size-1 dims broadcast.
        const int64_t rows = cDims.size() == 2 ? cDims[0] : 1;
        const int64_t cols = cDims.empty() ? 1 : cDims.back();
        bias = c->get((rows == 1 ? 0 : i) * cols + (cols == 1 ? 0 : j));
      }
      out[i * n + j] = alpha * sum + beta * bias;
    }
  return out;
}

void checkGemm(DType dtype, bool transA, bool transB, const Dims *cDims, double alpha,
               double beta) {
  const int64_t m = 5, n = 7, k = 3;
  Buffer a(dtype, transA ? Dims{k, m} : Dims{m, k}), b(dtype, transB ? Dims{n, k} : Dims{k, n});
  a.fillRandom(3);
  b.fillRandom(4);
  Buffer c(dtype, cDims ? *cDims : Dims{});
  c.fillRandom(5);
  Buffer out(dtype, {m, n});
  std::vector<double> expected = refGemm(a, b, cDims ? &c : nullptr, cDims ? *cDims : Dims{},
                                         alpha, beta, transA, transB, m, n, k);
  if (!isFloat(dtype)) // scaled integer results truncate toward zero
    for (double &v : expected)
      v = std::trunc(v);
  TensorRef cRef = c.ref();
  const Status status = gemm(a.ref(), b.ref(), cDims ? &cRef : nullptr, static_cast<float>(alpha),
                             static_cast<float>(beta), transA, transB, out.ref());
  ASSERT_TRUE(status.isOk()) << status.message();
  std::string bias = "none";
  if (cDims) {
    bias = "[";
    for (int64_t d : *cDims)
      bias += std::to_string(d) + ",";
    bias += "]";
  }
  expectClose(expected, out, dtype,
              std::string(dtypeName(dtype)) + " gemm transA=" + std::to_string(transA) +
                  " transB=" + std::to_string(transB) + " bias " + bias);
}

TEST(LinearAlgebraKernels, GemmTransposesAndBiasShapes) {
  const std::vector<Dims> biasShapes = {{}, {1}, {7}, {1, 7}, {5, 1}, {5, 7}, {1, 1}};
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::I32})
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        checkGemm(dtype, transA, transB, nullptr, 1.0, 1.0);
        for (const Dims &c : biasShapes) {
          checkGemm(dtype, transA, transB, &c, 1.0, 1.0);
          // Integer scaling goes through double: these factors stay exact.
          checkGemm(dtype, transA, transB, &c, 0.5, 2.0);
        }
      }
}

TEST(LinearAlgebraKernels, GemmZeroBetaIgnoresBias) {
  Buffer a(DType::F32, {2, 3}), b(DType::F32, {3, 2}), c(DType::F32, {2, 2}),
      out(DType::F32, {2, 2});
  a.fillRandom(6);
  b.fillRandom(7);
  for (int64_t i = 0; i < c.size(); ++i)
    c.set(i, NAN);
  TensorRef cRef = c.ref();
  ASSERT_TRUE(gemm(a.ref(), b.ref(), &cRef, 1.0f, 0.0f, false, false, out.ref()).isOk());
  for (int64_t i = 0; i < out.size(); ++i)
    EXPECT_TRUE(std::isfinite(out.get(i)));
}

TEST(LinearAlgebraKernels, GemmBiasMayAliasResult) {
  // out = op(a) @ op(b) + out, the accumulate-in-place form.
  Buffer a(DType::F32, {4, 3}), b(DType::F32, {3, 2}), out(DType::F32, {4, 2});
  a.fillRandom(8);
  b.fillRandom(9);
  out.fillRandom(10);
  const std::vector<double> expected =
      refGemm(a, b, &out, {4, 2}, 1.0, 1.0, false, false, 4, 2, 3);
  TensorRef outRef = out.ref();
  ASSERT_TRUE(gemm(a.ref(), b.ref(), &outRef, 1.0f, 1.0f, false, false, outRef).isOk());
  expectClose(expected, out, DType::F32, "aliased gemm");
}

} // namespace
