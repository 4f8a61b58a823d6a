//===- TorchExportKernelsTest.cpp - the CPU kernels of torch 2.x export ops ===//
//
// Each kernel of TorchExportKernels.cpp against a naive double-precision
// reference written from the math, in every float dtype it serves (GELU in
// both approximations and its gradient, reciprocal, cos, sin, softplus far
// into both tails), and the data-movement kernels on several shapes and
// dtypes: pad (int64 labels with -100, floats, rank 0..3, zero-size),
// tile (every dim repeated, a dim of 0) and cumsum (every axis, exclusive
// and reverse, int32 wrapping); plus the errors a malformed instruction gets.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"

#include <cmath>
#include <functional>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;
using namespace fsdp::rt::cpu::kerneltest;

namespace {

const DType kFloats[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

double geluRef(double x) { return 0.5 * x * (1 + std::erf(x / std::sqrt(2.0))); }
double geluTanhRef(double x) {
  return 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}
/// The derivative by its formula: Phi(x) + x phi(x), and the tanh form's.
double geluGradRef(double x) {
  return 0.5 * (1 + std::erf(x / std::sqrt(2.0))) + x * std::exp(-x * x / 2) / std::sqrt(2 * M_PI);
}
double geluTanhGradRef(double x) {
  double k = std::sqrt(2 / M_PI), u = k * (x + 0.044715 * x * x * x), t = std::tanh(u);
  return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
}
double softplusRef(double x) { return x > 0 ? x + std::log1p(std::exp(-x)) : std::log1p(std::exp(x)); }

/// x spread over [-8, 8] plus the tails and zero.
TestTensor mathInput(DType dtype) {
  TestTensor x(dtype, {4, 9});
  x.fillUniform(7, -8, 8);
  x.set(0, 0.0);
  x.set(1, -30.0);
  x.set(2, 30.0);
  x.set(3, 1e-3);
  return x;
}

void checkMath(MathKind kind, const std::function<double(double)> &ref, const char *what,
               bool avoidZero = false) {
  for (DType dtype : kFloats) {
    TestTensor x = mathInput(dtype), y(dtype, x.dims);
    if (avoidZero)
      x.set(0, 0.25);
    ASSERT_TRUE(math(kind, x.ref(), y.ref()).isOk()) << what;
    std::vector<double> expected;
    for (int64_t i = 0; i < x.size(); ++i)
      expected.push_back(ref(x.get(i)));
    // f32 erf/tanh/exp are the fast few-ulp versions (FastMath.h).
    expectClose(expected, y, tolerance(dtype, 4), std::string(what) + " " + dtypeName(dtype));
  }
}

TEST(TorchExportKernels, UnaryMathMatchesReference) {
  checkMath(MathKind::Gelu, geluRef, "gelu");
  checkMath(MathKind::GeluTanh, geluTanhRef, "gelu tanh");
  checkMath(MathKind::Reciprocal, [](double x) { return 1 / x; }, "reciprocal", true);
  checkMath(MathKind::Cos, [](double x) { return std::cos(x); }, "cos");
  checkMath(MathKind::Sin, [](double x) { return std::sin(x); }, "sin");
  checkMath(MathKind::Softplus, softplusRef, "softplus");
}

TEST(TorchExportKernels, SoftplusIsStableInBothTails) {
  TestTensor x(DType::F32, {3}), y(DType::F32, {3});
  x.set(0, 100.0);  // exp(100) overflows float: the naive formula gives inf
  x.set(1, -80.0);  // 1 + exp(-80) rounds to 1: the naive formula gives 0
  x.set(2, 0.0);
  ASSERT_TRUE(math(MathKind::Softplus, x.ref(), y.ref()).isOk());
  EXPECT_EQ(y.get(0), 100.0);
  EXPECT_NEAR(y.get(1), std::exp(-80.0), 1e-5 * std::exp(-80.0));
  EXPECT_NEAR(y.get(2), std::log(2.0), 1e-7);
}

TEST(TorchExportKernels, GeluGradMatchesReference) {
  for (bool tanh : {false, true})
    for (DType dtype : kFloats) {
      TestTensor x = mathInput(dtype), dy(dtype, x.dims), dx(dtype, x.dims);
      dy.fillUniform(3, -2, 2);
      ASSERT_TRUE(geluGrad(tanh, x.ref(), dy.ref(), dx.ref()).isOk());
      std::vector<double> expected;
      for (int64_t i = 0; i < x.size(); ++i)
        expected.push_back(dy.get(i) * (tanh ? geluTanhGradRef(x.get(i)) : geluGradRef(x.get(i))));
      expectClose(expected, dx, tolerance(dtype, 8),
                  std::string("gelu_grad ") + (tanh ? "tanh " : "") + dtypeName(dtype));
    }
}

TEST(TorchExportKernels, MathRefusesIntegersAndMismatches) {
  TestTensor i(DType::I64, {3}), o(DType::I64, {3}), f(DType::F32, {3}), g(DType::F32, {4});
  EXPECT_FALSE(math(MathKind::Cos, i.ref(), o.ref()).isOk());
  EXPECT_FALSE(math(MathKind::Cos, f.ref(), g.ref()).isOk());
  EXPECT_FALSE(geluGrad(false, f.ref(), g.ref(), f.ref()).isOk());
}

/// Unravels `flat` over `dims`.
std::vector<int64_t> coordsOf(int64_t flat, const Dims &dims) {
  std::vector<int64_t> c(dims.size());
  for (int d = static_cast<int>(dims.size()) - 1; d >= 0; --d) {
    c[d] = flat % dims[d];
    flat /= dims[d];
  }
  return c;
}
int64_t flatOf(const std::vector<int64_t> &c, const Dims &dims) {
  int64_t flat = 0;
  for (size_t d = 0; d < dims.size(); ++d)
    flat = flat * dims[d] + c[d];
  return flat;
}

void checkPad(DType dtype, const Dims &in, const std::vector<int64_t> &pads, double value) {
  size_t rank = in.size();
  Dims outDims(rank);
  for (size_t d = 0; d < rank; ++d)
    outDims[d] = in[d] + pads[d] + pads[rank + d];
  TestTensor x(dtype, in), v(dtype, {}), y(dtype, outDims);
  x.fillUniform(11, -50, 50);
  v.set(0, value);
  ASSERT_TRUE(pad(x.ref(), v.ref(), pads.data(), y.ref()).isOk());
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = coordsOf(i, outDims);
    bool inside = true;
    for (size_t d = 0; d < rank; ++d) {
      c[d] -= pads[d];
      inside &= c[d] >= 0 && c[d] < in[d];
    }
    ASSERT_EQ(y.getBits(i), inside ? x.getBits(flatOf(c, in)) : v.getBits(0))
        << dtypeName(dtype) << " at " << i;
  }
}

TEST(TorchExportKernels, PadPlacesInputAndFillsValue) {
  checkPad(DType::I64, {2, 5}, {0, 0, 0, 1}, -100); // transformers' label shift
  checkPad(DType::F32, {2, 3, 4}, {1, 0, 2, 0, 3, 1}, 0.5);
  checkPad(DType::BF16, {3}, {2, 2}, -1);
  checkPad(DType::I32, {}, {}, 7);
  checkPad(DType::F64, {2, 0, 3}, {0, 1, 1, 1, 0, 0}, 2); // empty input, padded output
  checkPad(DType::Bool, {2, 2}, {1, 1, 0, 0}, 1);
}

TEST(TorchExportKernels, PadRefusesWrongShapes) {
  TestTensor x(DType::F32, {2, 3}), v(DType::F32, {}), y(DType::F32, {2, 4}), vi(DType::I64, {});
  std::vector<int64_t> pads = {0, 0, 0, 2}, good = {0, 0, 0, 1}, negative = {0, -1, 0, 2};
  EXPECT_FALSE(pad(x.ref(), v.ref(), pads.data(), y.ref()).isOk());
  EXPECT_FALSE(pad(x.ref(), v.ref(), negative.data(), y.ref()).isOk());
  EXPECT_FALSE(pad(x.ref(), vi.ref(), good.data(), y.ref()).isOk());
  EXPECT_TRUE(pad(x.ref(), v.ref(), good.data(), y.ref()).isOk());
}

void checkTile(DType dtype, const Dims &in, const Dims &repeats) {
  Dims outDims(in.size());
  for (size_t d = 0; d < in.size(); ++d)
    outDims[d] = in[d] * repeats[d];
  TestTensor x(dtype, in), y(dtype, outDims);
  x.fillUniform(5, -9, 9);
  ASSERT_TRUE(tile(x.ref(), y.ref()).isOk());
  for (int64_t i = 0; i < y.size(); ++i) {
    std::vector<int64_t> c = coordsOf(i, outDims);
    for (size_t d = 0; d < in.size(); ++d)
      c[d] %= in[d];
    ASSERT_EQ(y.getBits(i), x.getBits(flatOf(c, in))) << dtypeName(dtype) << " at " << i;
  }
}

TEST(TorchExportKernels, TileRepeatsEveryDim) {
  checkTile(DType::F32, {2, 3}, {2, 1});
  checkTile(DType::F32, {2, 3}, {1, 3});
  checkTile(DType::I64, {2, 1, 3}, {2, 4, 2});
  checkTile(DType::F16, {5}, {3});
  checkTile(DType::I32, {}, {});
  checkTile(DType::F32, {2, 3}, {0, 2});
  TestTensor x(DType::F32, {2, 3}), y(DType::F32, {3, 3});
  EXPECT_FALSE(tile(x.ref(), y.ref()).isOk());
}

void checkCumSum(DType dtype, const Dims &dims, int64_t axis, bool exclusive, bool reverse) {
  TestTensor x(dtype, dims), y(dtype, dims);
  x.fillUniform(9, -20, 20);
  ASSERT_TRUE(cumsum(x.ref(), axis, exclusive, reverse, y.ref()).isOk());
  std::vector<double> expected(x.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    std::vector<int64_t> c = coordsOf(i, dims);
    double sum = 0;
    for (int64_t k = 0; k < dims[axis]; ++k) {
      bool counted = reverse ? (exclusive ? k > c[axis] : k >= c[axis])
                             : (exclusive ? k < c[axis] : k <= c[axis]);
      std::vector<int64_t> at = c;
      at[axis] = k;
      if (counted)
        sum += x.get(flatOf(at, dims));
    }
    expected[i] = sum;
  }
  expectClose(expected, y, tolerance(dtype, 4),
              std::string("cumsum ") + dtypeName(dtype) + " axis " + std::to_string(axis));
}

TEST(TorchExportKernels, CumSumEveryAxisAndMode) {
  for (bool exclusive : {false, true})
    for (bool reverse : {false, true})
      for (int64_t axis : {0, 1, 2}) {
        checkCumSum(DType::F32, {3, 4, 5}, axis, exclusive, reverse);
        checkCumSum(DType::I64, {3, 4, 5}, axis, exclusive, reverse);
      }
  checkCumSum(DType::F64, {7}, 0, false, false);
  checkCumSum(DType::BF16, {2, 6}, 1, true, false);
}

TEST(TorchExportKernels, CumSumWrapsIntegers) {
  TestTensor x(DType::I32, {2}), y(DType::I32, {2});
  x.set(0, 2147483647.0);
  x.set(1, 1.0);
  ASSERT_TRUE(cumsum(x.ref(), 0, false, false, y.ref()).isOk());
  EXPECT_EQ(y.get(1), -2147483648.0);
  EXPECT_FALSE(cumsum(x.ref(), 1, false, false, y.ref()).isOk());
}

} // namespace
