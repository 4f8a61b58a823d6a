//===- AttentionKernelsTest.cpp - the flash-style attention kernels -------===//
//
// attention and attentionGrad against a double-precision reference written
// here the plain way (the full score matrix, softmax, its analytic
// gradient), over f32, f64, bf16 and f16, causal and masked (bool and
// additive, broadcast), grouped-query heads, Tq != Tk, sizes that are not
// a multiple of the 64-key tile, and fully masked rows (zeros, lse -inf,
// zero gradients); 16-bit types by both routes (oneDNN's block products
// and the exact kernels, FSDP_CPU_GEMM); the bits do not depend on the
// kernel thread count; bad operands are errors.
//
//===----------------------------------------------------------------------===//

#include "KernelTestUtil.h"

#include "runtime/backends/cpu/KernelThreads.h"

#include <cstdlib>
#include <limits>
#include <optional>

namespace fsdp::rt::cpu {
namespace {

using namespace kerneltest;

struct Case {
  int64_t b, h, hkv, tq, tk, d, dv;
  bool causal;
  // 0 none, 1 bool [Tq, Tk] (row 1 fully masked), 2 float [B, 1, 1, Tk].
  int mask;
};

struct Reference {
  std::vector<double> out, lse, dq, dk, dv;
};

/// The plain computation: every score, a softmax per row, P V; then the
/// backward from dout through the same P.
Reference reference(const Case &c, const std::vector<double> &q, const std::vector<double> &k,
                    const std::vector<double> &v, const TestTensor *mask,
                    const std::vector<double> &dout, double scale) {
  Reference r;
  r.out.assign(c.b * c.h * c.tq * c.dv, 0);
  r.lse.assign(c.b * c.h * c.tq, 0);
  r.dq.assign(q.size(), 0);
  r.dk.assign(k.size(), 0);
  r.dv.assign(v.size(), 0);
  const double ninf = -std::numeric_limits<double>::infinity();
  for (int64_t b = 0; b < c.b; ++b)
    for (int64_t h = 0; h < c.h; ++h) {
      const int64_t g = h / (c.h / c.hkv);
      for (int64_t i = 0; i < c.tq; ++i) {
        std::vector<double> s(c.tk), p(c.tk, 0);
        double m = ninf;
        for (int64_t j = 0; j < c.tk; ++j) {
          double acc = 0;
          for (int64_t x = 0; x < c.d; ++x)
            acc += q[((b * c.h + h) * c.tq + i) * c.d + x] * k[((b * c.hkv + g) * c.tk + j) * c.d + x];
          s[j] = acc * scale;
          if (c.causal && j > i)
            s[j] = ninf;
          if (c.mask == 1 && mask->get(i * c.tk + j) == 0)
            s[j] = ninf;
          if (c.mask == 2)
            s[j] += mask->get(b * c.tk + j);
          m = std::max(m, s[j]);
        }
        const int64_t row = (b * c.h + h) * c.tq + i;
        if (m == ninf) {
          r.lse[row] = ninf;
          continue;
        }
        double sum = 0;
        for (int64_t j = 0; j < c.tk; ++j)
          sum += std::exp(s[j] - m);
        r.lse[row] = m + std::log(sum);
        for (int64_t j = 0; j < c.tk; ++j)
          p[j] = std::exp(s[j] - m) / sum;
        std::vector<double> dp(c.tk, 0);
        double delta = 0;
        for (int64_t j = 0; j < c.tk; ++j)
          for (int64_t x = 0; x < c.dv; ++x) {
            const double vj = v[((b * c.hkv + g) * c.tk + j) * c.dv + x];
            r.out[row * c.dv + x] += p[j] * vj;
            dp[j] += dout[row * c.dv + x] * vj;
            r.dv[((b * c.hkv + g) * c.tk + j) * c.dv + x] += p[j] * dout[row * c.dv + x];
          }
        for (int64_t j = 0; j < c.tk; ++j)
          delta += p[j] * dp[j];
        for (int64_t j = 0; j < c.tk; ++j) {
          const double ds = p[j] * (dp[j] - delta) * scale;
          for (int64_t x = 0; x < c.d; ++x) {
            r.dq[row * c.d + x] += ds * k[((b * c.hkv + g) * c.tk + j) * c.d + x];
            r.dk[((b * c.hkv + g) * c.tk + j) * c.d + x] += ds * q[row * c.d + x];
          }
        }
      }
    }
  return r;
}

struct Results {
  TestTensor out, lse, dq, dk, dv;
};

Results runKernels(DType dtype, const Case &c, const TestTensor &q, const TestTensor &k,
               const TestTensor &v, const TestTensor *mask, const TestTensor &dout, float scale) {
  const DType lseType = dtype == DType::F64 ? DType::F64 : DType::F32;
  Results r{TestTensor(dtype, {c.b, c.h, c.tq, c.dv}), TestTensor(lseType, {c.b, c.h, c.tq}),
        TestTensor(dtype, q.dims), TestTensor(dtype, k.dims), TestTensor(dtype, v.dims)};
  const TensorRef maskRef = mask ? mask->ref() : TensorRef();
  const TensorRef *m = mask ? &maskRef : nullptr;
  Status s = attention(q.ref(), k.ref(), v.ref(), m, c.causal, scale, {}, r.out.ref(), r.lse.ref());
  EXPECT_TRUE(s.isOk()) << s.message();
  s = attentionGrad(q.ref(), k.ref(), v.ref(), m, r.out.ref(), r.lse.ref(), dout.ref(), c.causal,
                    scale, {}, r.dq.ref(), r.dk.ref(), r.dv.ref());
  EXPECT_TRUE(s.isOk()) << s.message();
  return r;
}

void checkCase(DType dtype, const Case &c) {
  SCOPED_TRACE(testing::Message() << dtypeName(dtype) << " B" << c.b << " H" << c.h << "/"
                                  << c.hkv << " Tq" << c.tq << " Tk" << c.tk << " D" << c.d
                                  << " causal " << c.causal << " mask " << c.mask);
  TestTensor q(dtype, {c.b, c.h, c.tq, c.d}), k(dtype, {c.b, c.hkv, c.tk, c.d}),
      v(dtype, {c.b, c.hkv, c.tk, c.dv}), dout(dtype, {c.b, c.h, c.tq, c.dv});
  q.fillUniform(1, -1, 1);
  k.fillUniform(2, -1, 1);
  v.fillUniform(3, -1, 1);
  dout.fillUniform(4, -1, 1);
  std::optional<TestTensor> mask;
  if (c.mask == 1) {
    mask.emplace(DType::Bool, Dims{c.tq, c.tk});
    for (int64_t i = 0; i < c.tq; ++i)
      for (int64_t j = 0; j < c.tk; ++j)
        mask->set(i * c.tk + j, i == 1 ? 0 : ((i + j) % 3 != 0 || j == 0));
  } else if (c.mask == 2) {
    mask.emplace(DType::F32, Dims{c.b, 1, 1, c.tk});
    mask->fillUniform(5, -2, 1);
    mask->set(c.tk - 1, -std::numeric_limits<double>::infinity());
  }
  const float scale = 1.0f / std::sqrt(static_cast<float>(c.d));
  Results got = runKernels(dtype, c, q, k, v, mask ? &*mask : nullptr, dout, scale);
  Reference want = reference(c, q.values(), k.values(), v.values(), mask ? &*mask : nullptr,
                             dout.values(), static_cast<double>(scale));
  // 16-bit: the probabilities are rounded before P V, as torch's do.
  const double slack = dtype == DType::F32 || dtype == DType::F64 ? 20 : 2;
  expectClose(want.out, got.out, tolerance(dtype, slack), "out");
  for (int64_t i = 0; i < got.lse.size(); ++i) {
    if (std::isinf(want.lse[i]))
      EXPECT_TRUE(std::isinf(got.lse.get(i)) && got.lse.get(i) < 0) << "lse at " << i;
    else
      EXPECT_NEAR(got.lse.get(i), want.lse[i], 1e-4 * std::max(1.0, std::abs(want.lse[i])))
          << "lse at " << i;
  }
  expectClose(want.dq, got.dq, tolerance(dtype, slack * 4), "dq");
  expectClose(want.dk, got.dk, tolerance(dtype, slack * 4), "dk");
  expectClose(want.dv, got.dv, tolerance(dtype, slack * 4), "dv");
}

TEST(CpuAttention, MatchesThePlainComputation) {
  const Case cases[] = {
      {2, 2, 2, 5, 5, 4, 4, false, 0},   {1, 4, 2, 9, 9, 8, 8, true, 0},
      {1, 4, 1, 7, 11, 4, 6, false, 1},  {2, 2, 1, 6, 6, 4, 4, true, 1},
      {2, 2, 2, 70, 131, 24, 16, false, 2}, {1, 2, 2, 130, 130, 8, 8, true, 2},
  };
  for (DType dtype : {DType::F32, DType::F64, DType::BF16, DType::F16})
    for (const Case &c : cases)
      checkCase(dtype, c);
}

/// FSDP_CPU_GEMM=value while in scope (unset after).
struct ScopedRoute {
  explicit ScopedRoute(const char *value) { setenv("FSDP_CPU_GEMM", value, 1); }
  ~ScopedRoute() { unsetenv("FSDP_CPU_GEMM"); }
};

// 16-bit attention by default goes through oneDNN's block products where
// oneDNN takes the type (AttentionGemms.h), and FSDP_CPU_GEMM=naive keeps the
// exact kernels: both against the reference, on sizes whose queries and
// keys span several of the oneDNN route's 256-row spans (causal and not,
// grouped heads, both masks, Tq != Tk both ways).
TEST(CpuAttention, BothSixteenBitRoutesMatchThePlainComputation) {
  const Case cases[] = {
      {1, 2, 1, 300, 330, 16, 8, true, 2},
      {1, 2, 2, 520, 260, 8, 8, false, 1},
      {2, 2, 1, 260, 600, 12, 20, false, 0},
      // One-element heads and rows: oneDNN products with k or n of 1.
      {1, 1, 1, 1, 1, 1, 1, false, 0},
      {1, 2, 1, 3, 700, 1, 3, true, 2},
  };
  for (const char *route : {"onednn", "naive"}) {
    SCOPED_TRACE(route);
    const ScopedRoute scoped(route);
    for (DType dtype : {DType::BF16, DType::F16})
      for (const Case &c : cases)
        checkCase(dtype, c);
  }
}

TEST(CpuAttention, FullyMaskedRowsAreZero) {
  const Case c{1, 1, 1, 3, 4, 4, 4, false, 1};
  TestTensor q(DType::F32, {1, 1, 3, 4}), k(DType::F32, {1, 1, 4, 4}), v(DType::F32, {1, 1, 4, 4}),
      dout(DType::F32, {1, 1, 3, 4}), mask(DType::Bool, {3, 4});
  q.fillUniform(1, -1, 1);
  k.fillUniform(2, -1, 1);
  v.fillUniform(3, -1, 1);
  dout.fillUniform(4, -1, 1);
  for (int64_t j = 0; j < 4; ++j) {
    mask.set(j, 1);
    mask.set(8 + j, 1);
  }
  Results r = runKernels(DType::F32, c, q, k, v, &mask, dout, 0.5f);
  for (int64_t x = 0; x < 4; ++x) {
    EXPECT_EQ(r.out.get(4 + x), 0.0);
    EXPECT_EQ(r.dq.get(4 + x), 0.0);
  }
  EXPECT_TRUE(std::isinf(r.lse.get(1)) && r.lse.get(1) < 0);
}

// B · Hkv = 4 tasks: one thread runs the single-pass backward, three the
// two passes (4 is not a multiple of 3 and under 4 · 3), so this also
// checks that both ways give the same bits.
// The 16-bit cases run both routes (the oneDNN one's queries in two
// spans at 300 rows).
TEST(CpuAttention, BitsDoNotDependOnTheThreadCount) {
  for (const char *route : {"onednn", "naive"})
    for (DType dtype : {DType::BF16, DType::F32})
      for (int64_t t : {67, 300}) {
        SCOPED_TRACE(testing::Message() << route << " " << dtypeName(dtype) << " T" << t);
        const ScopedRoute scoped(route);
        const Case c{2, 4, 2, t, t, 8, 8, true, 0};
        TestTensor q(dtype, {2, 4, t, 8}), k(dtype, {2, 2, t, 8}), v(dtype, {2, 2, t, 8}),
            dout(dtype, {2, 4, t, 8});
        q.fillUniform(1, -1, 1);
        k.fillUniform(2, -1, 1);
        v.fillUniform(3, -1, 1);
        dout.fillUniform(4, -1, 1);
        Results one = runKernels(dtype, c, q, k, v, nullptr, dout, 0.35f);
        KernelThreads pool(3);
        KernelThreads::Scope scope(&pool);
        Results two = runKernels(dtype, c, q, k, v, nullptr, dout, 0.35f);
        EXPECT_GT(pool.jobsRun(), 0u);
        EXPECT_EQ(one.out.storage, two.out.storage);
        EXPECT_EQ(one.dq.storage, two.dq.storage);
        EXPECT_EQ(one.dk.storage, two.dk.storage);
        EXPECT_EQ(one.dv.storage, two.dv.storage);
      }
}

TEST(CpuAttention, BadOperandsAreErrors) {
  TestTensor q(DType::F32, {1, 3, 4, 4}), k(DType::F32, {1, 2, 4, 4}), v(DType::F32, {1, 2, 4, 4}),
      out(DType::F32, {1, 3, 4, 4}), lse(DType::F32, {1, 3, 4}), rank3(DType::F32, {3, 4, 4}),
      half(DType::F16, {1, 2, 4, 4}), mask(DType::Bool, {5, 4});
  EXPECT_FALSE(attention(q.ref(), k.ref(), v.ref(), nullptr, false, 1, {}, out.ref(), lse.ref()).isOk());
  EXPECT_FALSE(attention(rank3.ref(), k.ref(), v.ref(), nullptr, false, 1, {}, out.ref(), lse.ref()).isOk());
  TestTensor q2(DType::F32, {1, 2, 4, 4}), out2(DType::F32, {1, 2, 4, 4}), lse2(DType::F32, {1, 2, 4});
  EXPECT_FALSE(attention(q2.ref(), half.ref(), v.ref(), nullptr, false, 1, {}, out2.ref(), lse2.ref()).isOk());
  const TensorRef m = mask.ref();
  EXPECT_FALSE(attention(q2.ref(), k.ref(), v.ref(), &m, false, 1, {}, out2.ref(), lse2.ref()).isOk());
  EXPECT_TRUE(attention(q2.ref(), k.ref(), v.ref(), nullptr, false, 1, {}, out2.ref(), lse2.ref()).isOk());
}

} // namespace
} // namespace fsdp::rt::cpu
