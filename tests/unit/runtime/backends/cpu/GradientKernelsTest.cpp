//===- GradientKernelsTest.cpp - backward kernels vs references -----------===//
//
// Every gradient kernel is checked twice: against a naive double-precision
// transcription of its formula, in each float dtype, and in f64 against
// central finite differences of the forward kernel it differentiates (the
// gradient of L = sum(dy * forward(x)) with respect to x), so a formula
// that is consistently wrong in both places still fails. Also: repeated
// and negative gather indices add up, slices with negative steps, ties in
// reduce-max split the gradient, ignored labels and every loss reduction,
// dropout's backward reusing the forward's mask and scale bit for bit,
// run-time errors, and that every forward kernel a gradient check needs
// accepts f64.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <optional>
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
  Buffer &random(uint32_t seed, double lo = -2.0, double hi = 2.0) {
    fillUniform(seed, lo, hi);
    return *this;
  }
};

constexpr DType kFloatDTypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16};

/// Gradients round a few more times than their forward kernels.
double tolerance(DType dtype) { return kerneltest::tolerance(dtype, 2.0); }

using kerneltest::expectClose;

void expectOk(const Status &status) { ASSERT_TRUE(status.isOk()) << status.message(); }

double dot(const Buffer &a, const Buffer &b) {
  double sum = 0;
  for (int64_t i = 0; i < a.size(); ++i)
    sum += a.get(i) * b.get(i);
  return sum;
}

/// d loss / d x by central differences; `loss` re-runs forward kernels in
/// f64 on x's current values.
std::vector<double> numericGrad(Buffer &x, const std::function<double()> &loss) {
  const double h = 1e-6;
  std::vector<double> grad(x.size());
  for (int64_t i = 0; i < x.size(); ++i) {
    const double v = x.get(i);
    x.set(i, v + h);
    const double up = loss();
    x.set(i, v - h);
    const double down = loss();
    x.set(i, v);
    grad[i] = (up - down) / (2 * h);
  }
  return grad;
}

constexpr double kFiniteDifferenceTolerance = 1e-6;

// --- Activations -------------------------------------------------------------------

struct Activation {
  ActivationGradKind grad;
  UnaryKind forward;
  bool savesResult; // else the input
  double (*derivative)(double x);
};

const Activation kActivations[] = {
    {ActivationGradKind::Relu, UnaryKind::Relu, true, [](double x) { return x > 0 ? 1.0 : 0.0; }},
    {ActivationGradKind::Erf, UnaryKind::Erf, false,
     [](double x) { return 2 / std::sqrt(M_PI) * std::exp(-x * x); }},
    {ActivationGradKind::Tanh, UnaryKind::Tanh, true,
     [](double x) { return 1 - std::tanh(x) * std::tanh(x); }},
    {ActivationGradKind::Sigmoid, UnaryKind::Sigmoid, true, [](double x) {
       const double s = 1 / (1 + std::exp(-x));
       return s * (1 - s);
     }}};

TEST(GradientKernels, ActivationsMatchTheirDerivatives) {
  for (const Activation &act : kActivations)
    for (DType dtype : kFloatDTypes) {
      const std::string what = cat("activation ", int(act.grad), " ", dtypeName(dtype));
      Buffer x(dtype, {5, 13}), y(dtype, {5, 13}), dy(dtype, {5, 13}), dx(dtype, {5, 13});
      x.random(1);
      dy.random(2);
      expectOk(unary(act.forward, x.ref(), y.ref()));
      expectOk(activationGrad(act.grad, act.savesResult ? y.ref() : x.ref(), dy.ref(), dx.ref()));
      std::vector<double> expected(x.size());
      for (int64_t i = 0; i < x.size(); ++i)
        expected[i] = dy.get(i) * act.derivative(x.get(i));
      // 16-bit floats round the saved value too; 1 - y*y loses digits.
      expectClose(expected, dx, dtype == DType::F32 ? 1e-5 : 8 * tolerance(dtype), what);
      if (dtype != DType::F64)
        continue;
      const std::vector<double> numeric = numericGrad(x, [&] {
        Buffer out(DType::F64, x.dims);
        EXPECT_TRUE(unary(act.forward, x.ref(), out.ref()).isOk());
        return dot(out, dy);
      });
      expectClose(numeric, dx, kFiniteDifferenceTolerance, what + " finite differences");
    }
}

TEST(GradientKernels, ReluGradFollowsThresholdBackward) {
  Buffer y(DType::F32, {4}), dy(DType::F32, {4}), dx(DType::F32, {4});
  const double ys[] = {0.0, -0.0, 2.0, NAN};
  for (int i = 0; i < 4; ++i) {
    y.set(i, ys[i]);
    dy.set(i, 3.0);
  }
  expectOk(activationGrad(ActivationGradKind::Relu, y.ref(), dy.ref(), dx.ref()));
  EXPECT_EQ(dx.values(), (std::vector<double>{0, 0, 3, 3})); // NaN <= 0 is false: dy passes
  Buffer wrong(DType::F64, {4});
  EXPECT_FALSE(activationGrad(ActivationGradKind::Relu, y.ref(), wrong.ref(), dx.ref()).isOk());
}

// --- Softmax -----------------------------------------------------------------------

/// y = softmax(x) along axis; returns the double reference of its backward.
std::vector<double> refSoftmaxGrad(const Buffer &y, const Buffer &dy, const Dims &dims,
                                   size_t axis, bool log) {
  const int64_t outer = numElements(dims, 0, axis), len = dims[axis],
                inner = numElements(dims, axis + 1);
  std::vector<double> dx(y.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * len + i) * inner + j; };
      double sum = 0;
      for (int64_t i = 0; i < len; ++i)
        sum += log ? dy.get(at(i)) : dy.get(at(i)) * y.get(at(i));
      for (int64_t i = 0; i < len; ++i)
        dx[at(i)] = log ? dy.get(at(i)) - std::exp(y.get(at(i))) * sum
                        : y.get(at(i)) * (dy.get(at(i)) - sum);
    }
  return dx;
}

TEST(GradientKernels, SoftmaxGradEveryAxis) {
  // [2, 1100] on axis 0 has more columns than one stack chunk (1024).
  const std::vector<Dims> shapes = {{7}, {3, 4, 5}, {2, 1100}};
  for (DType dtype : kFloatDTypes)
    for (const Dims &dims : shapes)
      for (size_t axis = 0; axis < dims.size(); ++axis)
        for (bool log : {false, true}) {
          const std::string what = cat(dtypeName(dtype), log ? " log" : "", " softmax_grad rank ",
                                       dims.size(), " axis ", axis);
          Buffer x(dtype, dims), y(dtype, dims), dy(dtype, dims), dx(dtype, dims);
          x.random(static_cast<uint32_t>(axis + 3));
          dy.random(static_cast<uint32_t>(axis + 4));
          expectOk(softmax(x.ref(), static_cast<int64_t>(axis), log, y.ref()));
          expectOk(softmaxGrad(y.ref(), dy.ref(), static_cast<int64_t>(axis), log, dx.ref()));
          expectClose(refSoftmaxGrad(y, dy, dims, axis, log), dx, 4 * tolerance(dtype), what);
          if (dtype != DType::F64 || numElements(dims) > 100)
            continue;
          const std::vector<double> numeric = numericGrad(x, [&] {
            Buffer out(DType::F64, dims);
            EXPECT_TRUE(softmax(x.ref(), static_cast<int64_t>(axis), log, out.ref()).isOk());
            return dot(out, dy);
          });
          expectClose(numeric, dx, kFiniteDifferenceTolerance, what + " finite differences");
        }
}

TEST(GradientKernels, SoftmaxGradInPlaceAndErrors) {
  Buffer x(DType::F32, {4, 6}), y(DType::F32, {4, 6}), dy(DType::F32, {4, 6});
  x.random(5);
  dy.random(6);
  expectOk(softmax(x.ref(), 1, false, y.ref()));
  const std::vector<double> expected = refSoftmaxGrad(y, dy, {4, 6}, 1, false);
  expectOk(softmaxGrad(y.ref(), dy.ref(), 1, false, dy.ref()));
  expectClose(expected, dy, 1e-5, "in place");
  EXPECT_FALSE(softmaxGrad(y.ref(), dy.ref(), 2, false, dy.ref()).isOk());
  Buffer ints(DType::I32, {4, 6});
  EXPECT_FALSE(softmaxGrad(ints.ref(), ints.ref(), 1, true, ints.ref()).isOk());
}

// --- Layer norm --------------------------------------------------------------------

TEST(GradientKernels, LayerNormGrad) {
  const Dims dims = {3, 4, 5};
  for (DType dtype : kFloatDTypes)
    for (size_t axis : {0, 1, 2}) {
      const std::string what = cat(dtypeName(dtype), " layer_norm_grad axis ", axis);
      const Dims block(dims.begin() + axis, dims.end()), statDims = [&] {
        Dims d = dims;
        std::fill(d.begin() + axis, d.end(), 1);
        return d;
      }();
      const int64_t rows = numElements(dims, 0, axis), size = numElements(block);
      Buffer x(dtype, dims), scale(dtype, block), bias(dtype, block), y(dtype, dims),
          dy(dtype, dims);
      Buffer mean(DType::F32, statDims), inv(DType::F32, statDims);
      if (dtype == DType::F64)
        mean = Buffer(DType::F64, statDims), inv = Buffer(DType::F64, statDims);
      x.random(7);
      scale.random(8, 0.5, 1.5);
      bias.random(9);
      dy.random(10);
      const TensorRef biasRef = bias.ref();
      const auto forward = [&](const Buffer &in, Buffer &out) {
        return layerNorm(in.ref(), scale.ref(), &biasRef, static_cast<int64_t>(axis), 1e-5f,
                         out.ref(), mean.ref(), inv.ref());
      };
      expectOk(forward(x, y));
      Buffer dx(dtype, dims), dscale(dtype, block), dbias(dtype, block);
      expectOk(layerNormGrad(x.ref(), scale.ref(), mean.ref(), inv.ref(), dy.ref(),
                             static_cast<int64_t>(axis), dx.ref(), dscale.ref(), dbias.ref()));
      // Reference in double from the saved statistics.
      std::vector<double> rdx(x.size()), rdscale(size, 0.0), rdbias(size, 0.0);
      for (int64_t r = 0; r < rows; ++r) {
        const double mu = mean.get(r), is = inv.get(r);
        double meanG = 0, meanGX = 0;
        for (int64_t i = 0; i < size; ++i) {
          const double xhat = (x.get(r * size + i) - mu) * is, g = dy.get(r * size + i);
          meanG += g * scale.get(i) / size;
          meanGX += g * scale.get(i) * xhat / size;
          rdscale[i] += g * xhat;
          rdbias[i] += g;
        }
        for (int64_t i = 0; i < size; ++i) {
          const double xhat = (x.get(r * size + i) - mu) * is;
          rdx[r * size + i] = is * (dy.get(r * size + i) * scale.get(i) - meanG - xhat * meanGX);
        }
      }
      const double tol = 16 * tolerance(dtype);
      expectClose(rdx, dx, tol, what + " dx");
      expectClose(rdscale, dscale, tol, what + " dscale");
      expectClose(rdbias, dbias, tol, what + " dbias");
      if (dtype != DType::F64)
        continue;
      auto loss = [&] {
        Buffer out(DType::F64, dims);
        EXPECT_TRUE(forward(x, out).isOk());
        return dot(out, dy);
      };
      expectClose(numericGrad(x, loss), dx, kFiniteDifferenceTolerance, what + " dx fd");
      expectClose(numericGrad(scale, loss), dscale, kFiniteDifferenceTolerance,
                  what + " dscale fd");
      expectClose(numericGrad(bias, loss), dbias, kFiniteDifferenceTolerance, what + " dbias fd");
    }
}

TEST(GradientKernels, LayerNormGradErrors) {
  Buffer x(DType::F32, {2, 3}), scale(DType::F32, {3}), stat(DType::F32, {2, 1});
  Buffer wrongScale(DType::F32, {2}), dx(DType::F32, {2, 3}), d3(DType::F32, {3});
  EXPECT_TRUE(layerNormGrad(x.ref(), scale.ref(), stat.ref(), stat.ref(), x.ref(), 1, dx.ref(),
                            d3.ref(), d3.ref()).isOk());
  EXPECT_FALSE(layerNormGrad(x.ref(), scale.ref(), stat.ref(), stat.ref(), x.ref(), 2, dx.ref(),
                             d3.ref(), d3.ref()).isOk());
  EXPECT_FALSE(layerNormGrad(x.ref(), wrongScale.ref(), stat.ref(), stat.ref(), x.ref(), 1,
                             dx.ref(), wrongScale.ref(), wrongScale.ref()).isOk());
}

// --- Gather, slice -------------------------------------------------------------------

TEST(GradientKernels, GatherGradIsGathersAdjoint) {
  // Repeated and negative indices: -1 and 3 name the same row of 4.
  const Dims dataDims = {2, 4, 3};
  const int64_t indices[] = {1, 3, -1, 0, 1};
  for (DType indexType : {DType::I32, DType::I64})
    for (int64_t axis : {1, -2}) {
      Buffer idx(indexType, {5}), data(DType::F64, dataDims), dy(DType::F64, {2, 5, 3});
      for (int i = 0; i < 5; ++i)
        idx.set(i, indices[i]);
      data.random(11);
      dy.random(12);
      Buffer ddata(DType::F64, dataDims);
      ddata.random(99); // must be overwritten
      expectOk(gatherGrad(idx.ref(), dy.ref(), axis, ddata.ref()));
      std::vector<double> expected(ddata.size(), 0.0);
      for (int64_t o = 0; o < 2; ++o)
        for (int64_t j = 0; j < 5; ++j)
          for (int64_t k = 0; k < 3; ++k)
            expected[(o * 4 + (indices[j] + 4) % 4) * 3 + k] += dy.get((o * 5 + j) * 3 + k);
      expectClose(expected, ddata, 1e-15, "gather_grad");
      const std::vector<double> numeric = numericGrad(data, [&] {
        Buffer out(DType::F64, {2, 5, 3});
        EXPECT_TRUE(gather(data.ref(), idx.ref(), axis, out.ref()).isOk());
        return dot(out, dy);
      });
      expectClose(numeric, ddata, kFiniteDifferenceTolerance, "gather_grad finite differences");
    }
  for (DType dtype : {DType::F32, DType::F16, DType::BF16}) {
    Buffer idx(DType::I64, {3}), dy(dtype, {3}), ddata(dtype, {2});
    idx.set(0, 1), idx.set(1, 1), idx.set(2, -2);
    dy.set(0, 0.5), dy.set(1, 0.25), dy.set(2, 3.0);
    expectOk(gatherGrad(idx.ref(), dy.ref(), 0, ddata.ref()));
    EXPECT_EQ(ddata.values(), (std::vector<double>{3.0, 0.75})) << dtypeName(dtype);
  }
}

TEST(GradientKernels, GatherGradOutOfRangeIndexIsAnError) {
  Buffer idx(DType::I64, {3}), dy(DType::F32, {3}), ddata(DType::F32, {4});
  idx.set(0, 1), idx.set(1, 4), idx.set(2, 0);
  ddata.set(0, 7.0);
  const Status status = gatherGrad(idx.ref(), dy.ref(), 0, ddata.ref());
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("index 4 (at position 1"), std::string::npos)
      << status.message();
  EXPECT_EQ(ddata.get(0), 7.0); // nothing written
  idx.set(1, -5);
  EXPECT_NE(gatherGrad(idx.ref(), dy.ref(), 0, ddata.ref()).message().find("index -5"),
            std::string::npos);
}

TEST(GradientKernels, SliceGradIsSlicesAdjoint) {
  struct Case {
    Dims in, out;
    std::vector<int64_t> starts, steps;
  };
  const Case cases[] = {{{6}, {3}, {1}, {2}},
                        {{6}, {3}, {5}, {-2}},
                        {{4, 5, 3}, {2, 5, 1}, {3, 4, 2}, {-2, -1, 1}},
                        {{3, 8}, {3, 4}, {0, 2}, {1, 1}}};
  for (const Case &c : cases)
    for (DType dtype : {DType::F64, DType::F32, DType::BF16}) {
      Buffer x(dtype, c.in), dy(dtype, c.out), dx(dtype, c.in);
      x.random(13);
      dy.random(14);
      dx.random(15); // must be overwritten
      expectOk(sliceGrad(dy.ref(), c.starts.data(), c.steps.data(), dx.ref()));
      Buffer sliced(dtype, c.out);
      expectOk(slice(x.ref(), c.starts.data(), c.steps.data(), sliced.ref()));
      // <slice(x), dy> == <x, slice_grad(dy)>, and dx is dy scattered.
      EXPECT_NEAR(dot(sliced, dy), dot(x, dx), 1e-4) << dtypeName(dtype);
      Buffer picked(dtype, c.out);
      expectOk(slice(dx.ref(), c.starts.data(), c.steps.data(), picked.ref()));
      EXPECT_EQ(picked.values(), dy.values());
      double total = 0;
      for (int64_t i = 0; i < dx.size(); ++i)
        total += std::abs(dx.get(i));
      double expected = 0;
      for (int64_t i = 0; i < dy.size(); ++i)
        expected += std::abs(dy.get(i));
      EXPECT_DOUBLE_EQ(total, expected); // zero outside the slice
    }
  Buffer dy(DType::F32, {3}), dx(DType::F32, {6});
  const int64_t start = 2, step = 2; // writes 2, 4, 6: past the end
  EXPECT_FALSE(sliceGrad(dy.ref(), &start, &step, dx.ref()).isOk());
}

// --- Reduce max ----------------------------------------------------------------------

TEST(GradientKernels, ReduceMaxGrad) {
  const Dims dims = {3, 4, 5};
  const std::vector<std::vector<int64_t>> axesList = {{0}, {1}, {2}, {0, 2}, {1, 2}, {0, 1, 2}};
  for (const std::vector<int64_t> &axes : axesList) {
    Dims kept = dims;
    for (int64_t a : axes)
      kept[a] = 1;
    Buffer x(DType::F64, dims), y(DType::F64, kept), dy(DType::F64, kept), dx(DType::F64, dims);
    x.random(16);
    dy.random(17);
    expectOk(reduce(ReduceKind::Max, x.ref(), axes.data(), static_cast<int>(axes.size()), y.ref()));
    expectOk(reduceMaxGrad(x.ref(), y.ref(), dy.ref(), axes.data(), static_cast<int>(axes.size()),
                           dx.ref()));
    const std::vector<double> numeric = numericGrad(x, [&] {
      Buffer out(DType::F64, kept);
      EXPECT_TRUE(
          reduce(ReduceKind::Max, x.ref(), axes.data(), static_cast<int>(axes.size()), out.ref())
              .isOk());
      return dot(out, dy);
    });
    expectClose(numeric, dx, kFiniteDifferenceTolerance, cat("reduce_max_grad axes ", axes.size()));
  }
  // Ties share the gradient evenly, in every float dtype.
  for (DType dtype : kFloatDTypes) {
    Buffer x(dtype, {2, 4}), y(dtype, {2, 1}), dy(dtype, {2, 1}), dx(dtype, {2, 4});
    const double xs[] = {1, 3, 3, 2, 5, -1, 5, 5};
    for (int i = 0; i < 8; ++i)
      x.set(i, xs[i]);
    dy.set(0, 1.0), dy.set(1, 3.0);
    const int64_t axis = 1;
    expectOk(reduce(ReduceKind::Max, x.ref(), &axis, 1, y.ref()));
    expectOk(reduceMaxGrad(x.ref(), y.ref(), dy.ref(), &axis, 1, dx.ref()));
    EXPECT_EQ(dx.values(), (std::vector<double>{0, 0.5, 0.5, 0, 1, 0, 1, 1})) << dtypeName(dtype);
  }
  Buffer x(DType::F32, {2, 3}), y(DType::F32, {2, 1});
  const int64_t badAxis = 2;
  EXPECT_FALSE(reduceMaxGrad(x.ref(), y.ref(), y.ref(), &badAxis, 1, x.ref()).isOk());
}

// --- Dropout -----------------------------------------------------------------------------

TEST(GradientKernels, DropoutGradReusesTheForwardMask) {
  for (DType dtype : kFloatDTypes)
    for (float ratio : {0.0f, 0.3f, 0.9f}) {
      Buffer dy(dtype, {257}), dx(dtype, {257}), viaForward(dtype, {257}), mask(DType::Bool, {257});
      dy.random(18);
      // The forward applied to dy itself multiplies by the same mask and scale.
      expectOk(dropout(dy.ref(), ratio, true, 42, 5, viaForward.ref(), mask.ref()));
      expectOk(dropoutGrad(dy.ref(), mask.ref(), ratio, dx.ref()));
      EXPECT_EQ(dx.storage, viaForward.storage) << dtypeName(dtype) << " ratio " << ratio;
      for (int64_t i = 0; i < dy.size(); ++i)
        ASSERT_NEAR(dx.get(i), mask.get(i) ? dy.get(i) / (1 - ratio) : 0.0,
                    tolerance(dtype) * std::abs(dy.get(i) / (1 - ratio)));
    }
  Buffer dy(DType::F32, {4}), mask(DType::Bool, {4}), wrongMask(DType::U8, {4});
  EXPECT_FALSE(dropoutGrad(dy.ref(), wrongMask.ref(), 0.5f, dy.ref()).isOk());
  EXPECT_FALSE(dropoutGrad(dy.ref(), mask.ref(), 1.0f, dy.ref()).isOk());
}

// --- Losses --------------------------------------------------------------------------------

struct LossCase {
  Dims scores; // [N, C, d...]
  Reduction reduction;
  bool weighted;
  std::optional<int64_t> ignoreIndex;
};

/// Labels in [0, C), with the ignored value planted at every third position.
Buffer makeLabels(const LossCase &c, DType dtype) {
  Dims dims = {c.scores[0]};
  dims.insert(dims.end(), c.scores.begin() + 2, c.scores.end());
  Buffer labels(dtype, dims);
  for (int64_t i = 0; i < labels.size(); ++i)
    labels.set(i, c.ignoreIndex && i % 3 == 1 ? *c.ignoreIndex : (i * 7 + 2) % c.scores[1]);
  return labels;
}

const std::vector<LossCase> &lossCases() {
  static const std::vector<LossCase> cases = [] {
    std::vector<LossCase> all;
    for (const Dims &dims : {Dims{4, 5}, Dims{3, 4, 2}, Dims{2, 3, 2, 2}})
      for (Reduction r : {Reduction::None, Reduction::Sum, Reduction::Mean})
        for (bool weighted : {false, true})
          for (std::optional<int64_t> ignore : {std::optional<int64_t>(), std::optional<int64_t>(1),
                                                std::optional<int64_t>(-100)})
            all.push_back({dims, r, weighted, ignore});
    return all;
  }();
  return cases;
}

std::string describe(const LossCase &c) {
  return cat("rank ", c.scores.size(), " reduction ", int(c.reduction),
             c.weighted ? " weighted" : "",
             c.ignoreIndex ? cat(" ignore ", *c.ignoreIndex) : std::string());
}

/// Fills dloss (scalar or per position) and returns L = sum(dloss * loss).
Buffer makeDloss(const LossCase &c, const Buffer &labels, DType dtype) {
  Buffer dloss(dtype, c.reduction == Reduction::None ? labels.dims : Dims{});
  dloss.random(19, 0.5, 1.5);
  return dloss;
}

/// The double reference of g at each position (0 when ignored).
std::vector<double> refLabelGrads(const LossCase &c, const Buffer &labels, const Buffer *weights,
                                  const Buffer &dloss) {
  double weightSum = 0;
  std::vector<double> w(labels.size());
  for (int64_t p = 0; p < labels.size(); ++p) {
    const int64_t t = static_cast<int64_t>(labels.get(p));
    w[p] = c.ignoreIndex && t == *c.ignoreIndex ? 0.0 : weights ? weights->get(t) : 1.0;
    weightSum += w[p];
  }
  std::vector<double> g(labels.size());
  for (int64_t p = 0; p < labels.size(); ++p) {
    const double scale = c.reduction == Reduction::None ? dloss.get(p)
                         : c.reduction == Reduction::Sum ? dloss.get(0)
                                                         : dloss.get(0) / weightSum;
    g[p] = -w[p] * scale;
  }
  return g;
}

TEST(GradientKernels, LossGradsMatchReferenceAndFiniteDifferences) {
  for (const LossCase &c : lossCases())
    for (DType dtype : kFloatDTypes) {
      const std::string what = describe(c) + " " + dtypeName(dtype);
      const int64_t n = c.scores[0], classes = c.scores[1], d = numElements(c.scores, 2);
      Buffer scores(dtype, c.scores), logProb(dtype, c.scores), weights(dtype, {classes});
      scores.random(20);
      weights.random(21, 0.5, 2.0);
      const Buffer labels = makeLabels(c, DType::I64);
      const Buffer dloss = makeDloss(c, labels, dtype);
      const TensorRef weightRef = weights.ref();
      const TensorRef *w = c.weighted ? &weightRef : nullptr;
      Buffer loss(dtype, dloss.dims);
      expectOk(softmaxCrossEntropy(scores.ref(), labels.ref(), w, c.reduction, c.ignoreIndex,
                                   loss.ref(), logProb.ref()));
      Buffer dscores(dtype, c.scores), dinput(dtype, c.scores);
      expectOk(softmaxCrossEntropyGrad(logProb.ref(), labels.ref(), w, dloss.ref(), c.reduction,
                                       c.ignoreIndex, dscores.ref()));
      dinput.random(98); // must be overwritten
      expectOk(nllLossGrad(labels.ref(), w, dloss.ref(), c.reduction, c.ignoreIndex, dinput.ref()));
      const std::vector<double> g =
          refLabelGrads(c, labels, c.weighted ? &weights : nullptr, dloss);
      std::vector<double> expectedNll(scores.size(), 0.0), expectedSce(scores.size());
      for (int64_t i = 0; i < n; ++i)
        for (int64_t j = 0; j < d; ++j) {
          const int64_t p = i * d + j, t = static_cast<int64_t>(labels.get(p));
          for (int64_t k = 0; k < classes; ++k) {
            const int64_t at = (i * classes + k) * d + j;
            const bool hit = g[p] != 0 && k == t;
            expectedNll[at] = hit ? g[p] : 0.0;
            expectedSce[at] = (hit ? g[p] : 0.0) - std::exp(logProb.get(at)) * g[p];
          }
        }
      const double tol = 4 * tolerance(dtype);
      expectClose(expectedNll, dinput, tol, what + " nll_grad");
      expectClose(expectedSce, dscores, tol, what + " softmax_cross_entropy_grad");
      if (dtype != DType::F64)
        continue;
      const auto lossOf = [&](const std::function<Status(Buffer &)> &forward) {
        Buffer out(DType::F64, dloss.dims);
        EXPECT_TRUE(forward(out).isOk());
        return dot(out, dloss);
      };
      expectClose(numericGrad(scores, [&] {
                    return lossOf([&](Buffer &out) {
                      Buffer lp(DType::F64, c.scores);
                      return softmaxCrossEntropy(scores.ref(), labels.ref(), w, c.reduction,
                                                 c.ignoreIndex, out.ref(), lp.ref());
                    });
                  }),
                  dscores, kFiniteDifferenceTolerance, what + " sce finite differences");
      expectClose(numericGrad(logProb, [&] {
                    return lossOf([&](Buffer &out) {
                      return nllLoss(logProb.ref(), labels.ref(), w, c.reduction, c.ignoreIndex,
                                     out.ref());
                    });
                  }),
                  dinput, kFiniteDifferenceTolerance, what + " nll finite differences");
    }
}

TEST(GradientKernels, LossGradLabelsAndErrors) {
  LossCase c{{3, 4}, Reduction::Mean, false, std::nullopt};
  Buffer logProb(DType::F32, {3, 4}), dscores(DType::F32, {3, 4}), dloss(DType::F32, {});
  dloss.set(0, 1.0);
  for (DType labelType : {DType::I32, DType::I64}) {
    Buffer labels = makeLabels(c, labelType);
    EXPECT_TRUE(softmaxCrossEntropyGrad(logProb.ref(), labels.ref(), nullptr, dloss.ref(),
                                        c.reduction, std::nullopt, dscores.ref())
                    .isOk());
    labels.set(2, 4);
    dscores.set(0, 5.0);
    const Status status = softmaxCrossEntropyGrad(logProb.ref(), labels.ref(), nullptr,
                                                  dloss.ref(), c.reduction, std::nullopt,
                                                  dscores.ref());
    ASSERT_FALSE(status.isOk());
    EXPECT_NE(status.message().find("label 4 at position 2"), std::string::npos)
        << status.message();
    EXPECT_EQ(dscores.get(0), 5.0); // labels are checked before writing
    EXPECT_FALSE(nllLossGrad(labels.ref(), nullptr, dloss.ref(), c.reduction, std::nullopt,
                             dscores.ref())
                     .isOk());
  }
  // Everything ignored under mean: the gradient is all zero (not NaN).
  Buffer labels(DType::I64, {3});
  for (int i = 0; i < 3; ++i)
    labels.set(i, -100);
  expectOk(nllLossGrad(labels.ref(), nullptr, dloss.ref(), Reduction::Mean, -100, dscores.ref()));
  EXPECT_EQ(dscores.values(), std::vector<double>(12, 0.0));
  Buffer wrongDloss(DType::F32, {3});
  EXPECT_FALSE(nllLossGrad(labels.ref(), nullptr, wrongDloss.ref(), Reduction::Mean, -100,
                           dscores.ref())
                   .isOk());
}

// --- f64 through the forward kernels ----------------------------------------------------

/// Gradient checks run whole graphs in f64: every forward kernel they reach
/// must accept it.
TEST(GradientKernels, ForwardKernelsAcceptF64) {
  const DType f = DType::F64;
  Buffer a(f, {2, 3}), b(f, {2, 3}), out(f, {2, 3}), cond(DType::Bool, {2, 3});
  a.random(22, 0.5, 2.0);
  b.random(23, 0.5, 2.0);
  for (BinaryKind k : {BinaryKind::Add, BinaryKind::Sub, BinaryKind::Mul, BinaryKind::Div,
                       BinaryKind::Pow})
    expectOk(binary(k, a.ref(), b.ref(), out.ref()));
  expectOk(where(cond.ref(), a.ref(), b.ref(), out.ref()));
  for (UnaryKind k : {UnaryKind::Neg, UnaryKind::Relu, UnaryKind::Exp, UnaryKind::Log,
                      UnaryKind::Sqrt, UnaryKind::Erf, UnaryKind::Tanh, UnaryKind::Sigmoid})
    expectOk(unary(k, a.ref(), out.ref()));
  Buffer bt(f, {3, 2}), mm(f, {2, 2}), c(f, {2});
  const TensorRef cRef = c.ref();
  expectOk(matmul(a.ref(), bt.ref(), mm.ref()));
  expectOk(gemm(a.ref(), b.ref(), &cRef, 1.0f, 1.0f, false, true, mm.ref()));
  expectOk(softmax(a.ref(), 1, false, out.ref()));
  expectOk(softmax(a.ref(), 1, true, out.ref()));
  Buffer scale(f, {3}), stat(f, {2, 1});
  expectOk(layerNorm(a.ref(), scale.ref(), nullptr, 1, 1e-5f, out.ref(), stat.ref(), stat.ref()));
  const int64_t axis1 = 1;
  Buffer reduced(f, {2});
  for (ReduceKind k : {ReduceKind::Sum, ReduceKind::Max, ReduceKind::Mean})
    expectOk(reduce(k, a.ref(), &axis1, 1, reduced.ref()));
  Buffer labels(DType::I64, {2}), scalar(f, {}), perm(f, {3, 2}), cat2(f, {2, 6});
  expectOk(softmaxCrossEntropy(a.ref(), labels.ref(), nullptr, Reduction::Mean, std::nullopt,
                               scalar.ref(), out.ref()));
  expectOk(nllLoss(a.ref(), labels.ref(), nullptr, Reduction::Sum, std::nullopt, scalar.ref()));
  expectOk(copy(a.ref(), out.ref()));
  const int64_t swap[] = {1, 0};
  expectOk(transpose(a.ref(), swap, perm.ref()));
  const TensorRef parts[] = {a.ref(), b.ref()};
  expectOk(concat(parts, 2, 1, cat2.ref()));
  expectOk(split(cat2.ref(), 1, parts, 2));
  const int64_t starts[] = {0, 1}, steps[] = {1, 1};
  Buffer sliced(f, {2, 2}), expanded(f, {2, 2, 3}), gathered(f, {2, 2});
  expectOk(slice(a.ref(), starts, steps, sliced.ref()));
  expectOk(expand(a.ref(), expanded.ref()));
  expectOk(gather(a.ref(), labels.ref(), 1, gathered.ref()));
  expectOk(trilu(a.ref(), true, 0, out.ref()));
  Buffer mask(DType::Bool, {2, 3});
  expectOk(dropout(a.ref(), 0.5f, true, 1, 1, out.ref(), mask.ref()));
}

} // namespace
