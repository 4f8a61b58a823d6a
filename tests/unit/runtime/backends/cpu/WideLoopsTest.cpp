//===- WideLoopsTest.cpp - every wide copy of a loop gives the same bits --===//
//
// The compute-bound loops run as an AVX-512, an AVX2 or the baseline
// (x86-64-v2) copy, whichever the CPU has (Dispatch.h's runWide and
// runWideFma). The backend builds with -ffp-contract=off so that the
// copies with FMA instructions fuse only the multiply-adds a kernel writes:
// this runs the kernel families that use the wide loops (unary math, GELU
// and its gradients, the activation gradients, softmax and its gradient,
// layer norm and its gradient, column reductions, the mixed-precision
// casts, attention and its gradient, AdamW) in f32, bf16 and f16 under
// every tier this CPU has, and requires the baseline's bits each time. Tiers the CPU lacks are
// skipped (and said so), so a CPU with AVX-512 checks all three.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::TestTensor;

using Run = std::function<std::vector<TestTensor>(DType)>;

/// Lifts the cap when a test ends, so later tests run the widest copy.
struct TierCap {
  ~TierCap() { setWideTierCap(WideTier::Avx512); }
};

/// `run` in f32, bf16 and f16 under the baseline, then under each wider
/// tier this CPU has: the same bits every time.
void expectTierIndependent(const std::string &what, const Run &run) {
  TierCap restore;
  for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
    setWideTierCap(WideTier::Baseline);
    ASSERT_EQ(cpuWideTier(), WideTier::Baseline);
    const std::vector<TestTensor> reference = run(dtype);
    for (WideTier tier : {WideTier::Avx2, WideTier::Avx512}) {
      setWideTierCap(tier);
      if (cpuWideTier() != tier) {
        std::printf("%s: this CPU has no %s copy to compare\n", what.c_str(), wideTierName(tier));
        continue;
      }
      const std::vector<TestTensor> got = run(dtype);
      ASSERT_EQ(got.size(), reference.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].size(), reference[k].size());
        for (int64_t i = 0; i < got[k].size(); ++i)
          ASSERT_EQ(got[k].getBits(i), reference[k].getBits(i))
              << what << " (" << dtypeName(dtype) << ") output " << k << " element " << i
              << " under " << wideTierName(tier);
      }
    }
  }
}

TestTensor random(DType dtype, Dims dims, uint32_t seed, double lo = -4.0, double hi = 4.0) {
  return kerneltest::uniformTensor(dtype, std::move(dims), seed, lo, hi);
}

void ok(const Status &s) { ASSERT_TRUE(s.isOk()) << s.message(); }

// Not a multiple of 16 lanes, so every copy runs its remainder loop too.
constexpr int64_t kRows = 37, kCols = 211;

TEST(WideLoops, UnaryMathAndGelu) {
  expectTierIndependent("unary math", [](DType t) {
    const TestTensor x = random(t, {kRows, kCols}, 1);
    std::vector<TestTensor> out;
    for (UnaryKind kind : {UnaryKind::Exp, UnaryKind::Tanh, UnaryKind::Sigmoid, UnaryKind::Erf}) {
      out.emplace_back(t, Dims{kRows, kCols});
      ok(unary(kind, x.ref(), out.back().ref()));
    }
    for (MathKind kind : {MathKind::Gelu, MathKind::GeluTanh, MathKind::Softplus}) {
      out.emplace_back(t, Dims{kRows, kCols});
      ok(math(kind, x.ref(), out.back().ref()));
    }
    return out;
  });
}

TEST(WideLoops, ActivationAndGeluGradients) {
  expectTierIndependent("gradients", [](DType t) {
    const TestTensor x = random(t, {kRows, kCols}, 2), dy = random(t, {kRows, kCols}, 3);
    std::vector<TestTensor> out;
    for (ActivationGradKind kind : {ActivationGradKind::Erf, ActivationGradKind::Tanh,
                                    ActivationGradKind::Sigmoid}) {
      out.emplace_back(t, Dims{kRows, kCols});
      ok(activationGrad(kind, x.ref(), dy.ref(), out.back().ref()));
    }
    for (bool tanh : {false, true}) {
      out.emplace_back(t, Dims{kRows, kCols});
      ok(geluGrad(tanh, x.ref(), dy.ref(), out.back().ref()));
    }
    return out;
  });
}

TEST(WideLoops, SoftmaxAndLayerNorm) {
  expectTierIndependent("softmax and layer norm", [](DType t) {
    const TestTensor x = random(t, {kRows, kCols}, 4), dy = random(t, {kRows, kCols}, 5);
    const TestTensor scale = random(t, {kCols}, 6), bias = random(t, {kCols}, 7);
    std::vector<TestTensor> out;
    for (bool log : {false, true}) {
      TestTensor y(t, {kRows, kCols});
      ok(softmax(x.ref(), 1, log, y.ref()));
      out.emplace_back(t, Dims{kRows, kCols});
      ok(softmaxGrad(y.ref(), dy.ref(), 1, log, out.back().ref()));
      out.push_back(std::move(y));
    }
    const DType stats = DType::F32; // f32 statistics for every dtype, as mixed precision keeps
    TestTensor y(t, {kRows, kCols}), mean(stats, {kRows, 1}), inv(stats, {kRows, 1});
    const TensorRef biasRef = bias.ref();
    ok(layerNorm(x.ref(), scale.ref(), &biasRef, 1, 1e-5f, y.ref(), mean.ref(), inv.ref()));
    TestTensor dx(t, {kRows, kCols}), dscale(t, {kCols}), dbias(t, {kCols});
    ok(layerNormGrad(x.ref(), scale.ref(), mean.ref(), inv.ref(), dy.ref(), 1, dx.ref(),
                     dscale.ref(), dbias.ref()));
    for (TestTensor *r : {&y, &mean, &inv, &dx, &dscale, &dbias})
      out.push_back(std::move(*r));
    return out;
  });
}

TEST(WideLoops, ColumnReductions) {
  expectTierIndependent("column sums", [](DType t) {
    const TestTensor x = random(t, {kRows, kCols}, 17);
    std::vector<TestTensor> out;
    const int64_t first[] = {0};
    for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Mean, ReduceKind::Max}) {
      out.emplace_back(t, Dims{1, kCols});
      ok(reduce(kind, x.ref(), first, 1, out.back().ref()));
    }
    return out;
  });
}

TEST(WideLoops, MixedPrecisionCasts) {
  expectTierIndependent("casts", [](DType t) {
    // Values across the 16-bit types' range, their subnormals and beyond.
    TestTensor wide = random(DType::F32, {kRows, kCols}, 8, -7e4, 7e4);
    for (int64_t i = 0; i < kCols; ++i)
      wide.set(i, (i - kCols / 2) * 1e-7);
    std::vector<TestTensor> out;
    out.emplace_back(t, Dims{kRows, kCols});
    ok(cast(wide.ref(), out.back().ref()));
    out.emplace_back(DType::F32, Dims{kRows, kCols});
    ok(cast(out[0].ref(), out.back().ref()));
    return out;
  });
}

TEST(WideLoops, AttentionAndAdamW) {
  expectTierIndependent("attention", [](DType t) {
    const TestTensor q = random(t, {1, 2, 67, 24}, 9, -1, 1), k = random(t, {1, 2, 67, 24}, 10, -1, 1);
    const TestTensor v = random(t, {1, 2, 67, 24}, 11, -1, 1), dout = random(t, {1, 2, 67, 24}, 12);
    std::vector<TestTensor> out;
    out.emplace_back(t, Dims{1, 2, 67, 24});
    out.emplace_back(DType::F32, Dims{1, 2, 67});
    ok(attention(q.ref(), k.ref(), v.ref(), nullptr, true, 0.2f, {}, out[0].ref(), out[1].ref()));
    for (int i = 0; i < 3; ++i)
      out.emplace_back(t, Dims{1, 2, 67, 24});
    ok(attentionGrad(q.ref(), k.ref(), v.ref(), nullptr, out[0].ref(), out[1].ref(), dout.ref(),
                     true, 0.2f, {}, out[2].ref(), out[3].ref(), out[4].ref()));
    return out;
  });
  expectTierIndependent("adamw", [](DType) {
    const TestTensor p = random(DType::F32, {kRows, kCols}, 13), g = random(DType::F32, {kRows, kCols}, 14);
    const TestTensor m = random(DType::F32, {kRows, kCols}, 15);
    const TestTensor v = random(DType::F32, {kRows, kCols}, 16, 0.0, 1.0);
    TestTensor lr(DType::F64, {}), step(DType::I64, {});
    lr.set(0, 1e-3);
    step.set(0, 7);
    std::vector<TestTensor> out;
    for (int i = 0; i < 3; ++i)
      out.emplace_back(DType::F32, Dims{kRows, kCols});
    ok(adamw(p.ref(), g.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), {0.9f, 0.999f, 1e-8f, 0.01f},
             out[0].ref(), out[1].ref(), out[2].ref()));
    return out;
  });
}

} // namespace
