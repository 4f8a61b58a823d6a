//===- OneDnnMatmulTest.cpp - bf16/f16 GEMMs against an f64 reference -----===//
//
// The 16-bit matrix products (OneDnnMatmul.h directly, and the matmul and
// gemm kernels over it): bf16 and f16 results within one ulp of the result
// type of an f64 reference on at least 99% of the elements (f32
// accumulation and one rounding: a correctly rounded sum is within half an
// ulp, so only the f32 sum's own error can push an element one further),
// for every transpose, batched and broadcast operands, k not a multiple of
// 16, alpha and beta through gemm's bias, each FSDP_CPU_GEMM route; rows
// split into pieces over a kernel pool, with the same bits as the pieces
// run inline; strided products into f32 (attention's blocks); the same
// bits run to run and from another thread; a bad
// FSDP_CPU_GEMM is an error naming it. On a CPU where oneDNN refuses a type the kernels widen
// to sgemm, and the same bounds hold.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/GemmLibrary.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/OneDnnMatmul.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <thread>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::TestTensor;

/// An environment variable set (or unset: nullopt) for a scope, then
/// restored.
class ScopedEnv {
public:
  ScopedEnv(const char *name, std::optional<std::string> value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    if (value)
      setenv(name, value->c_str(), 1);
    else
      unsetenv(name);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

struct ScopedRoute : ScopedEnv {
  explicit ScopedRoute(std::string value) : ScopedEnv("FSDP_CPU_GEMM", std::move(value)) {}
};

TestTensor uniform(DType t, Dims dims, uint32_t seed) {
  TestTensor x(t, std::move(dims));
  x.fillUniform(seed, -1, 1);
  return x;
}

/// A 16-bit pattern's position on a line where neighbouring floats are
/// neighbouring integers (negative values mirrored below zero).
int64_t ordered(uint64_t bits) {
  const int64_t magnitude = static_cast<int64_t>(bits & 0x7fff);
  return bits & 0x8000 ? -magnitude : magnitude;
}

/// The share of `got`'s elements at most one ulp of its 16-bit type from
/// `expected` rounded to that type.
double withinOneUlp(const std::vector<double> &expected, const TestTensor &got) {
  EXPECT_EQ(static_cast<int64_t>(expected.size()), got.size());
  TestTensor rounded(got.dtype, {got.size()});
  int64_t close = 0;
  for (int64_t i = 0; i < got.size(); ++i) {
    rounded.set(i, expected[i]);
    close += std::llabs(ordered(got.getBits(i)) - ordered(rounded.getBits(i))) <= 1;
  }
  return got.size() ? static_cast<double>(close) / static_cast<double>(got.size()) : 1.0;
}

/// op(a) @ op(b) in f64 for one row-major matrix pair.
std::vector<double> reference(const ProductShape &s, const TestTensor &a, const TestTensor &b) {
  std::vector<double> out(s.m * s.n, 0.0);
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      double sum = 0;
      for (int64_t l = 0; l < s.k; ++l)
        sum += a.get(s.transA ? l * s.m + i : i * s.k + l) *
               b.get(s.transB ? j * s.k + l : l * s.n + j);
      out[i * s.n + j] = sum;
    }
  return out;
}

struct Product {
  ProductShape shape;
  TestTensor a, b;
};

Product randomProduct(DType t, int64_t m, int64_t n, int64_t k, bool transA, bool transB,
                      uint32_t seed) {
  ProductShape s;
  s.m = m;
  s.n = n;
  s.k = k;
  s.transA = transA;
  s.transB = transB;
  return {s, uniform(t, transA ? Dims{k, m} : Dims{m, k}, seed),
          uniform(t, transB ? Dims{n, k} : Dims{k, n}, seed + 1)};
}

TEST(OneDnnMatmul, NamesItsIsaAndLibraries) {
  EXPECT_STRNE(oneDnnIsa(), "");
  const std::string libraries = gemmLibraries();
  EXPECT_NE(libraries.find("bf16 "), std::string::npos) << libraries;
  EXPECT_NE(libraries.find(oneDnnIsa()), std::string::npos) << libraries;
  EXPECT_NE(libraries.find("kernels' wide loops: "), std::string::npos) << libraries;
  // A JIT implementation, never oneDNN's reference loop, when it takes bf16.
  if (oneDnnTakes(DType::BF16)) {
    ProductShape s;
    s.m = s.n = s.k = 64;
    const std::string impl = oneDnnImplementation(s, DType::BF16);
    EXPECT_FALSE(impl.empty());
    EXPECT_NE(impl.rfind("ref", 0), 0u) << impl;
  }
}

TEST(OneDnnMatmul, TakesBf16OnlyWithBf16Instructions) {
  // Elsewhere oneDNN emulates bf16 three times slower than widening to
  // sgemm; ctest also runs this under ONEDNN_MAX_CPU_ISA=AVX512_CORE
  // (OneDnnMatmul.NoBf16Instructions), so a CPU with them checks both.
  const std::string isa = oneDnnIsa();
  const bool native = isa == "avx512_core_bf16" || isa == "avx512_core_amx";
  EXPECT_EQ(oneDnnTakes(DType::BF16), native) << isa;
  if (!native) {
    EXPECT_NE(gemmLibraries().find("bf16 OpenBLAS (widened)"), std::string::npos) << gemmLibraries();
  }
}

TEST(OneDnnMatmul, EveryTransposeWithinOneUlp) {
  for (DType t : {DType::BF16, DType::F16}) {
    if (!oneDnnTakes(t))
      continue; // the kernels' tests below cover the widened fallback
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        // k = 133: not a multiple of oneDNN's 16 (bf16 pairs, 32-lane blocks).
        Product p = randomProduct(t, 37, 70, 133, transA, transB, 7);
        TestTensor out(t, {37, 70});
        ASSERT_TRUE(oneDnnProduct(p.shape, t, p.a.ref().data, p.b.ref().data, out.ref().data,
                                  1.0f, 0.0f));
        EXPECT_GE(withinOneUlp(reference(p.shape, p.a, p.b), out), 0.99)
            << dtypeName(t) << " transA " << transA << " transB " << transB;
      }
  }
}

// The strided product attention's blocks use (AttentionGemms.cpp): 16-bit
// operands in wider rows than the product reads, an f32 result in wider
// rows, written or accumulated; the padding of out is left alone. The f32
// sum of exact products is within 1e-5 of the f64 one at these sizes.
TEST(OneDnnMatmul, StridedProductsIntoF32) {
  const int64_t m = 37, n = 29, k = 70, pad = 11;
  for (DType t : {DType::BF16, DType::F16}) {
    if (!oneDnnTakes(t))
      continue;
    for (bool transA : {false, true})
      for (bool transB : {false, true})
        for (bool accumulate : {false, true}) {
          SCOPED_TRACE(testing::Message() << dtypeName(t) << " transA " << transA << " transB "
                                          << transB << " accumulate " << accumulate);
          const int64_t lda = (transA ? m : k) + pad, ldb = (transB ? k : n) + pad;
          const StridedProduct s{m, n, k, lda, ldb, n + pad, transA, transB};
          const TestTensor a = uniform(t, {transA ? k : m, s.lda}, 3);
          const TestTensor b = uniform(t, {transB ? n : k, s.ldb}, 4);
          std::vector<float> out(m * s.ldc);
          for (size_t i = 0; i < out.size(); ++i)
            out[i] = 0.25f * static_cast<float>(i % 7);
          const std::vector<float> before = out;
          ASSERT_TRUE(oneDnnStridedProduct(s, t, a.ref().data, b.ref().data, out.data(),
                                           accumulate));
          for (int64_t i = 0; i < m; ++i)
            for (int64_t j = 0; j < s.ldc; ++j) {
              const float got = out[i * s.ldc + j], old = before[i * s.ldc + j];
              if (j >= n) {
                EXPECT_EQ(got, old) << "padding at " << i << ", " << j;
                continue;
              }
              double want = accumulate ? old : 0.0;
              for (int64_t l = 0; l < k; ++l)
                want += a.get(transA ? l * s.lda + i : i * s.lda + l) *
                        b.get(transB ? j * s.ldb + l : l * s.ldb + j);
              EXPECT_NEAR(got, want, 1e-5 * std::max(1.0, std::abs(want))) << i << ", " << j;
            }
        }
  }
}

TEST(OneDnnMatmul, RowPiecesOnAPoolGiveTheInlineBits) {
  // Three kernel threads: 200 rows in pieces of 66, 67 and 67 (two
  // primitives), a's pieces columns of its stored transpose under transA.
  ScopedEnv threads("OPENBLAS_NUM_THREADS", std::string("3"));
  KernelThreads pool(3);
  for (DType t : {DType::BF16, DType::F16}) {
    if (!oneDnnTakes(t))
      continue;
    for (bool transA : {false, true})
      for (bool transB : {false, true}) {
        Product p = randomProduct(t, 200, 48, 80, transA, transB, 41);
        TestTensor inline_(t, {200, 48}), pooled(t, {200, 48});
        ASSERT_TRUE(oneDnnProduct(p.shape, t, p.a.ref().data, p.b.ref().data,
                                  inline_.ref().data, 1.0f, 0.0f));
        const uint64_t jobs = pool.jobsRun();
        {
          KernelThreads::Scope scope(&pool);
          ASSERT_TRUE(oneDnnProduct(p.shape, t, p.a.ref().data, p.b.ref().data,
                                    pooled.ref().data, 1.0f, 0.0f));
        }
        EXPECT_EQ(pool.jobsRun(), jobs + 1) << "the pieces did not run on the pool";
        EXPECT_EQ(inline_.storage, pooled.storage) << dtypeName(t);
        EXPECT_GE(withinOneUlp(reference(p.shape, p.a, p.b), pooled), 0.99)
            << dtypeName(t) << " transA " << transA << " transB " << transB;
      }
  }
}

TEST(OneDnnMatmul, RefusesWhatItDoesNotRun) {
  Product p = randomProduct(DType::F64, 4, 4, 4, false, false, 1);
  TestTensor out(DType::F64, {4, 4});
  EXPECT_FALSE(oneDnnProduct(p.shape, DType::F64, p.a.ref().data, p.b.ref().data,
                             out.ref().data, 1.0f, 0.0f));
  EXPECT_EQ(oneDnnImplementation(p.shape, DType::F64), "");
}

/// matmul of `aDims` @ `bDims` (numpy broadcasting) under the current
/// route, against the f64 reference computed per batch entry.
void checkBatchedMatmul(DType t, const Dims &aDims, const Dims &bDims, const Dims &outDims,
                        int64_t aBatchStride, int64_t bBatchStride, const std::string &what) {
  TestTensor a = uniform(t, aDims, 11), b = uniform(t, bDims, 12);
  TestTensor out(t, outDims);
  ASSERT_TRUE(matmul(a.ref(), b.ref(), out.ref()).isOk()) << what;
  ProductShape s;
  s.m = aDims[aDims.size() - 2];
  s.k = aDims.back();
  s.n = bDims.back();
  const int64_t batches = out.size() / (s.m * s.n);
  std::vector<double> expected;
  for (int64_t i = 0; i < batches; ++i) {
    // Operands of batch entry i: the tests' broadcasts repeat one operand
    // (stride 0) or walk it in step with the result.
    TestTensor ai(t, {s.m, s.k}), bi(t, {s.k, s.n});
    for (int64_t e = 0; e < ai.size(); ++e)
      ai.setBits(e, a.getBits(i * aBatchStride * ai.size() + e));
    for (int64_t e = 0; e < bi.size(); ++e)
      bi.setBits(e, b.getBits(i * bBatchStride * bi.size() + e));
    std::vector<double> part = reference(s, ai, bi);
    expected.insert(expected.end(), part.begin(), part.end());
  }
  EXPECT_GE(withinOneUlp(expected, out), 0.99) << what;
}

TEST(OneDnnMatmul, KernelsWithinOneUlpOnEveryRoute) {
  for (const char *route : {"onednn", "widen", "naive"}) {
    ScopedRoute scoped{std::string(route)};
    for (DType t : {DType::BF16, DType::F16}) {
      const std::string what = std::string(dtypeName(t)) + " FSDP_CPU_GEMM=" + route;
      // The folded path: [4, 24, 96] @ [96, 50] is one 96-row product.
      checkBatchedMatmul(t, {4, 24, 96}, {96, 50}, {4, 24, 50}, 1, 0, what + " folded");
      // One product per batch entry, the left operand broadcast.
      checkBatchedMatmul(t, {1, 33, 70}, {3, 70, 17}, {3, 33, 17}, 0, 1, what + " broadcast");
      checkBatchedMatmul(t, {2, 16, 40}, {2, 40, 24}, {2, 16, 24}, 1, 1, what + " batched");
    }
  }
}

TEST(OneDnnMatmul, GemmAlphaBetaAndBiasWithinOneUlp) {
  for (const char *route : {"onednn", "widen"}) {
    ScopedRoute scoped{std::string(route)};
    for (DType t : {DType::BF16, DType::F16})
      for (bool transA : {false, true})
        for (bool transB : {false, true})
          for (float beta : {0.0f, 1.0f, 0.5f}) {
            const float alpha = 0.75f;
            Product p = randomProduct(t, 20, 30, 45, transA, transB, 21);
            TestTensor bias = uniform(t, {1, 30}, 23), out(t, {20, 30});
            const TensorRef biasRef = bias.ref();
            ASSERT_TRUE(
                gemm(p.a.ref(), p.b.ref(), &biasRef, alpha, beta, transA, transB, out.ref())
                    .isOk());
            std::vector<double> expected = reference(p.shape, p.a, p.b);
            for (int64_t i = 0; i < 20 * 30; ++i)
              expected[i] = alpha * expected[i] + (beta != 0 ? beta * bias.get(i % 30) : 0.0);
            EXPECT_GE(withinOneUlp(expected, out), 0.99)
                << dtypeName(t) << " " << route << " transA " << transA << " transB " << transB
                << " beta " << beta;
          }
  }
}

TEST(OneDnnMatmul, SameBitsRunToRunAndFromAnotherThread) {
  for (DType t : {DType::BF16, DType::F16}) {
    TestTensor a = uniform(t, {64, 200}, 31), b = uniform(t, {200, 96}, 32);
    TestTensor first(t, {64, 96}), again(t, {64, 96}), other(t, {64, 96});
    ASSERT_TRUE(matmul(a.ref(), b.ref(), first.ref()).isOk());
    ASSERT_TRUE(matmul(a.ref(), b.ref(), again.ref()).isOk());
    Status fromThread;
    std::thread([&] { fromThread = matmul(a.ref(), b.ref(), other.ref()); }).join();
    ASSERT_TRUE(fromThread.isOk()) << fromThread.message();
    EXPECT_EQ(first.storage, again.storage) << dtypeName(t);
    EXPECT_EQ(first.storage, other.storage) << dtypeName(t);
  }
}

TEST(OneDnnMatmul, UnknownRouteIsAnError) {
  ScopedRoute scoped{std::string("fast")};
  TestTensor a = uniform(DType::BF16, {2, 3}, 1), b = uniform(DType::BF16, {3, 2}, 2);
  TestTensor out(DType::BF16, {2, 2});
  const Status status = matmul(a.ref(), b.ref(), out.ref());
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("FSDP_CPU_GEMM='fast'"), std::string::npos)
      << status.message();
  EXPECT_NE(status.message().find("matmul"), std::string::npos) << status.message();
}

} // namespace
