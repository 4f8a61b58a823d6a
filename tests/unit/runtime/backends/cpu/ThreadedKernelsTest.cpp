//===- ThreadedKernelsTest.cpp - kernels give the same bits on any pool ---===//
//
// Every CPU kernel family that splits across the rank's threads
// (KernelThreads.h) runs without a pool and on pools of 2, 3 and 8
// threads, over sizes that split unevenly (and leave partial fused blocks
// and lane groups), and must produce the same bits each time: elementwise
// (broadcast binary, where, unary, math), transpose, fused, softmax and log-softmax
// (last and middle axis), layer norm, reductions (runs and columns), the
// activation, GELU, softmax, layer-norm and cross-entropy gradients,
// dropout and its gradient, and AdamW. Each run must also have used the
// pool, so a kernel that stopped splitting fails here too.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/KernelThreads.h"

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::TestTensor;

/// Builds fresh outputs, runs the kernel(s) into them and returns them.
using Run = std::function<std::vector<TestTensor>()>;

/// `run` on no pool, then on pools of 2, 3 and 8 threads: the same bits,
/// and every pooled run split at least once.
void expectThreadIndependent(const std::string &what, const Run &run) {
  const std::vector<TestTensor> reference = run();
  for (int threads : {2, 3, 8}) {
    KernelThreads pool(threads);
    std::vector<TestTensor> got;
    {
      KernelThreads::Scope scope(&pool);
      got = run();
    }
    EXPECT_GT(pool.jobsRun(), 0u) << what << " did not split on " << threads << " threads";
    ASSERT_EQ(got.size(), reference.size());
    for (size_t k = 0; k < got.size(); ++k) {
      ASSERT_EQ(got[k].size(), reference[k].size());
      for (int64_t i = 0; i < got[k].size(); ++i)
        ASSERT_EQ(got[k].getBits(i), reference[k].getBits(i))
            << what << " output " << k << " element " << i << " on " << threads << " threads";
    }
  }
}

TestTensor random(DType dtype, Dims dims, uint32_t seed, double lo = -3.0, double hi = 3.0) {
  return kerneltest::uniformTensor(dtype, std::move(dims), seed, lo, hi);
}

void ok(const Status &s) { ASSERT_TRUE(s.isOk()) << s.message(); }

// Rows x columns that divide unevenly by 2, 3 and 8 and are not multiples
// of the 16 lanes; 77k elements, enough for 8 pieces of the 8192 grain.
constexpr int64_t kRows = 301, kCols = 257;

TEST(ThreadedKernels, Elementwise) {
  const TestTensor a = random(DType::F32, {kRows, kCols}, 1);
  const TestTensor b = random(DType::F32, {kCols}, 2, 0.5, 2.0);
  const TestTensor c = random(DType::F32, {kRows, kCols}, 3);
  expectThreadIndependent("broadcast div", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols})};
    ok(binary(BinaryKind::Div, a.ref(), b.ref(), out[0].ref()));
    return out;
  });
  expectThreadIndependent("bf16 mul", [&] {
    TestTensor x = random(DType::BF16, {kRows, kCols}, 4), y = random(DType::BF16, {kRows, 1}, 5);
    std::vector<TestTensor> out{TestTensor(DType::BF16, {kRows, kCols})};
    ok(binary(BinaryKind::Mul, x.ref(), y.ref(), out[0].ref()));
    return out;
  });
  expectThreadIndependent("where", [&] {
    TestTensor cond(DType::Bool, {kRows, kCols});
    for (int64_t i = 0; i < cond.size(); ++i)
      cond.set(i, (i * 7919) % 3 == 0);
    TestTensor fill(DType::F32, {});
    fill.set(0, -1e9);
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols})};
    ok(where(cond.ref(), a.ref(), fill.ref(), out[0].ref()));
    return out;
  });
  expectThreadIndependent("tanh and gelu", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, kCols})};
    ok(unary(UnaryKind::Tanh, a.ref(), out[0].ref()));
    ok(math(MathKind::Gelu, c.ref(), out[1].ref()));
    return out;
  });
}

TEST(ThreadedKernels, Transpose) {
  const TestTensor heads = random(DType::F32, {7, 97, 11, 13}, 22);
  const TestTensor batch = random(DType::F32, {13, 101, 67}, 23);
  expectThreadIndependent("transpose", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {7, 11, 97, 13}),
                                TestTensor(DType::F32, {13, 67, 101})};
    const int64_t swapMiddle[] = {0, 2, 1, 3}, swapLast[] = {0, 2, 1};
    ok(transpose(heads.ref(), swapMiddle, out[0].ref())); // strided rows
    ok(transpose(batch.ref(), swapLast, out[1].ref()));   // tiles
    return out;
  });
}

TEST(ThreadedKernels, Fused) {
  // y = (x * (erf(x / sqrt2) + 1)) * 0.5 with the saved erf + 1: a size
  // that ends mid-block.
  const int64_t n = kRows * kCols;
  const TestTensor x = random(DType::F32, {n}, 6);
  TestTensor sqrt2(DType::F32, {}), one(DType::F32, {}), half(DType::F32, {});
  sqrt2.set(0, 1.4142135381698608);
  one.set(0, 1.0);
  half.set(0, 0.5);
  const std::vector<int64_t> ints{5, 3, 0, 1, 9, 4, -1, 0, 5, 2, 2, 0, 6, 2, 7, 3, 8, 6};
  expectThreadIndependent("fused gelu", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {n}), TestTensor(DType::F32, {n})};
    const TensorRef in[] = {x.ref(), sqrt2.ref(), one.ref(), half.ref()};
    const TensorRef outs[] = {out[0].ref(), out[1].ref()};
    ok(fusedElementwise(in, 4, ints.data(), static_cast<int>(ints.size()), outs, 2));
    return out;
  });
}

TEST(ThreadedKernels, SoftmaxAndLayerNorm) {
  const TestTensor x = random(DType::F32, {kRows, kCols}, 7);
  const TestTensor x3 = random(DType::F32, {11, 97, 73}, 8);
  for (bool log : {false, true}) {
    expectThreadIndependent(log ? "log_softmax" : "softmax", [&] {
      std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                  TestTensor(DType::F32, {11, 97, 73})};
      ok(softmax(x.ref(), 1, log, out[0].ref()));
      ok(softmax(x3.ref(), 1, log, out[1].ref()));
      return out;
    });
  }
  const TestTensor scale = random(DType::F32, {kCols}, 9), bias = random(DType::F32, {kCols}, 10);
  expectThreadIndependent("layer_norm", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, 1}),
                                TestTensor(DType::F32, {kRows, 1})};
    const TensorRef biasRef = bias.ref();
    ok(layerNorm(x.ref(), scale.ref(), &biasRef, 1, 1e-5f, out[0].ref(), out[1].ref(),
                 out[2].ref()));
    return out;
  });
}

TEST(ThreadedKernels, Reductions) {
  const TestTensor x = random(DType::F32, {kRows, kCols}, 11);
  const TestTensor x3 = random(DType::F64, {7, 1031, 13}, 12);
  for (ReduceKind kind : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Mean}) {
    expectThreadIndependent("reduce", [&] {
      std::vector<TestTensor> out{TestTensor(DType::F32, {kRows}), TestTensor(DType::F32, {kCols}),
                                  TestTensor(DType::F64, {7, 13})};
      const int64_t last[] = {1}, first[] = {0}, middle[] = {1};
      ok(reduce(kind, x.ref(), last, 1, out[0].ref()));   // runs
      ok(reduce(kind, x.ref(), first, 1, out[1].ref()));  // columns
      ok(reduce(kind, x3.ref(), middle, 1, out[2].ref())); // columns by outer index
      return out;
    });
  }
}

TEST(ThreadedKernels, Gradients) {
  const TestTensor x = random(DType::F32, {kRows, kCols}, 13);
  const TestTensor dy = random(DType::F32, {kRows, kCols}, 14);
  expectThreadIndependent("activation and gelu gradients", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, kCols})};
    ok(activationGrad(ActivationGradKind::Erf, x.ref(), dy.ref(), out[0].ref()));
    ok(geluGrad(false, x.ref(), dy.ref(), out[1].ref()));
    ok(geluGrad(true, x.ref(), dy.ref(), out[2].ref()));
    return out;
  });
  TestTensor y(DType::F32, {kRows, kCols});
  ok(softmax(x.ref(), 1, false, y.ref()));
  const TestTensor y3 = random(DType::F32, {11, 97, 73}, 15, 0.0, 1.0);
  const TestTensor dy3 = random(DType::F32, {11, 97, 73}, 16);
  for (bool log : {false, true}) {
    expectThreadIndependent("softmax_grad", [&] {
      std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                  TestTensor(DType::F32, {11, 97, 73})};
      ok(softmaxGrad(y.ref(), dy.ref(), 1, log, out[0].ref()));
      ok(softmaxGrad(y3.ref(), dy3.ref(), 1, log, out[1].ref()));
      return out;
    });
  }
  const TestTensor scale = random(DType::F32, {kCols}, 17);
  TestTensor ln(DType::F32, {kRows, kCols}), mean(DType::F32, {kRows, 1}),
      inv(DType::F32, {kRows, 1});
  ok(layerNorm(x.ref(), scale.ref(), nullptr, 1, 1e-5f, ln.ref(), mean.ref(), inv.ref()));
  expectThreadIndependent("layer_norm_grad", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kCols}), TestTensor(DType::F32, {kCols})};
    ok(layerNormGrad(x.ref(), scale.ref(), mean.ref(), inv.ref(), dy.ref(), 1, out[0].ref(),
                     out[1].ref(), out[2].ref()));
    return out;
  });
  TestTensor logProb(DType::F32, {kRows, kCols});
  ok(softmax(x.ref(), 1, true, logProb.ref()));
  TestTensor labels(DType::I64, {kRows}), dloss(DType::F32, {});
  for (int64_t i = 0; i < kRows; ++i)
    labels.set(i, (i * 31) % kCols);
  labels.set(5, -100); // ignored
  dloss.set(0, 0.75);
  expectThreadIndependent("softmax_cross_entropy_grad", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols})};
    ok(softmaxCrossEntropyGrad(logProb.ref(), labels.ref(), nullptr, dloss.ref(), Reduction::Mean,
                               -100, out[0].ref()));
    return out;
  });
}

TEST(ThreadedKernels, DropoutAndAdamW) {
  const TestTensor x = random(DType::F32, {kRows, kCols}, 18);
  expectThreadIndependent("dropout and its gradient", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::Bool, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, kCols})};
    ok(dropout(x.ref(), 0.1f, true, 42, 3, out[0].ref(), out[1].ref()));
    ok(dropoutGrad(x.ref(), out[1].ref(), 0.1f, out[2].ref()));
    return out;
  });
  const TestTensor g = random(DType::F32, {kRows, kCols}, 19);
  const TestTensor m = random(DType::F32, {kRows, kCols}, 20);
  const TestTensor v = random(DType::F32, {kRows, kCols}, 21, 0.0, 1.0);
  TestTensor lr(DType::F64, {}), step(DType::I64, {});
  lr.set(0, 1e-3);
  step.set(0, 7);
  const AdamWConfig config{0.9f, 0.999f, 1e-8f, 0.01f};
  expectThreadIndependent("adamw", [&] {
    std::vector<TestTensor> out{TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, kCols}),
                                TestTensor(DType::F32, {kRows, kCols})};
    ok(adamw(x.ref(), g.ref(), m.ref(), v.ref(), lr.ref(), step.ref(), config, out[0].ref(),
             out[1].ref(), out[2].ref()));
    return out;
  });
}

} // namespace
