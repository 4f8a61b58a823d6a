//===- NormalizationKernelsTest.cpp - softmax and layer norm vs a naive reference --===//
//
// Checks softmax / log-softmax on every axis (contiguous and strided paths,
// including more columns than one strided chunk), their stability on large
// scores and in place, and layer norm for every axis with full, broadcast
// and absent scale/bias, statistics of another dtype, and the 16-bit
// floats, against double-precision references written here.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::numElements;

/// A float test tensor with this test's random fill.
struct Buffer : kerneltest::TestTensor {
  using TestTensor::TestTensor;
  void fillRandom(uint32_t seed, double lo = -3.0, double hi = 3.0) { fillUniform(seed, lo, hi); }
};

using kerneltest::tolerance;

void expectClose(const std::vector<double> &expected, const Buffer &got, DType dtype,
                 const std::string &what) {
  kerneltest::expectClose(expected, got, tolerance(dtype), what);
}

/// Softmax in double over `axis`, reading the (already rounded) input.
std::vector<double> refSoftmax(const Buffer &in, const Dims &dims, size_t axis, bool log) {
  const int64_t outer = numElements(dims, 0, axis), len = dims[axis],
                inner = numElements(dims, axis + 1);
  std::vector<double> out(in.size());
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      auto at = [&](int64_t i) { return (o * len + i) * inner + j; };
      double max = -INFINITY, sum = 0;
      for (int64_t i = 0; i < len; ++i)
        max = std::max(max, in.get(at(i)));
      for (int64_t i = 0; i < len; ++i)
        sum += std::exp(in.get(at(i)) - max);
      for (int64_t i = 0; i < len; ++i)
        out[at(i)] = log ? in.get(at(i)) - max - std::log(sum) : std::exp(in.get(at(i)) - max) / sum;
    }
  return out;
}

void checkSoftmax(DType dtype, const Dims &dims, size_t axis, bool log) {
  Buffer in(dtype, dims), out(dtype, dims);
  in.fillRandom(static_cast<uint32_t>(axis + 11));
  const Status status = softmax(in.ref(), static_cast<int64_t>(axis), log, out.ref());
  ASSERT_TRUE(status.isOk()) << status.message();
  expectClose(refSoftmax(in, dims, axis, log), out, dtype,
              std::string(dtypeName(dtype)) + (log ? " log_softmax" : " softmax") + " rank " +
                  std::to_string(dims.size()) + " axis " + std::to_string(axis));
}

TEST(NormalizationKernels, SoftmaxEveryAxis) {
  // [3, 1100] on axis 0 strides over more columns than one chunk (1024).
  const std::vector<Dims> shapes = {{7}, {3, 4, 5}, {2, 3, 1, 70}, {3, 1100}, {2, 40, 3}};
  for (DType dtype : {DType::F32, DType::F64, DType::F16, DType::BF16})
    for (const Dims &dims : shapes)
      for (size_t axis = 0; axis < dims.size(); ++axis)
        for (bool log : {false, true})
          checkSoftmax(dtype, dims, axis, log);
}

TEST(NormalizationKernels, SoftmaxIsStableOnLargeScores) {
  for (size_t axis : {0, 1}) {
    Buffer in(DType::F32, {2, 2}), out(DType::F32, {2, 2});
    const double values[] = {1000, 1001, -1000, 3e38};
    for (int i = 0; i < 4; ++i)
      in.set(i, values[i]);
    for (bool log : {false, true}) {
      ASSERT_TRUE(softmax(in.ref(), static_cast<int64_t>(axis), log, out.ref()).isOk());
      for (int64_t i = 0; i < 4; ++i)
        EXPECT_FALSE(std::isnan(out.get(i))) << "axis " << axis << " log " << log;
      expectClose(refSoftmax(in, {2, 2}, axis, log), out, DType::F32, "large scores");
    }
  }
}

TEST(NormalizationKernels, SoftmaxInPlace) {
  for (size_t axis : {0, 1})
    for (bool log : {false, true}) {
      Buffer data(DType::F32, {6, 9});
      data.fillRandom(3);
      const std::vector<double> expected = refSoftmax(data, {6, 9}, axis, log);
      TensorRef ref = data.ref();
      ASSERT_TRUE(softmax(ref, static_cast<int64_t>(axis), log, ref).isOk());
      expectClose(expected, data, DType::F32, "in-place softmax");
    }
}

TEST(NormalizationKernels, SoftmaxErrors) {
  Buffer in(DType::F32, {2, 3}), out(DType::F32, {2, 3}), ints(DType::I32, {2, 3});
  EXPECT_FALSE(softmax(in.ref(), 2, false, out.ref()).isOk());
  EXPECT_FALSE(softmax(in.ref(), -1, false, out.ref()).isOk());
  EXPECT_FALSE(softmax(ints.ref(), 1, false, ints.ref()).isOk());
}

/// Layer norm in double. scale/bias dims broadcast onto dims[axis..].
void refLayerNorm(const Buffer &x, const Dims &dims, size_t axis, const Buffer &scale,
                  const Dims &scaleDims, const Buffer *bias, const Dims &biasDims, double eps,
                  std::vector<double> &y, std::vector<double> &mean, std::vector<double> &inv) {
  const Dims block(dims.begin() + axis, dims.end());
  const int64_t rows = numElements(dims, 0, axis), size = numElements(block);
  // Index of block element e in a tensor of `pDims` broadcast onto block.
  auto broadcastIndex = [&](const Dims &pDims, int64_t e) {
    int64_t index = 0, scaleFactor = 1;
    for (size_t i = block.size(); i-- > 0;) {
      const int64_t coord = e % block[i];
      e /= block[i];
      const size_t shift = block.size() - pDims.size();
      if (i < shift)
        continue;
      const int64_t pd = pDims[i - shift];
      index += (pd == 1 ? 0 : coord) * scaleFactor;
      scaleFactor *= pd;
    }
    return index;
  };
  y.assign(x.size(), 0);
  mean.assign(rows, 0);
  inv.assign(rows, 0);
  for (int64_t r = 0; r < rows; ++r) {
    double sum = 0, squares = 0;
    for (int64_t e = 0; e < size; ++e)
      sum += x.get(r * size + e);
    const double mu = sum / size;
    for (int64_t e = 0; e < size; ++e)
      squares += (x.get(r * size + e) - mu) * (x.get(r * size + e) - mu);
    const double invStd = 1.0 / std::sqrt(squares / size + eps);
    mean[r] = mu;
    inv[r] = invStd;
    for (int64_t e = 0; e < size; ++e)
      y[r * size + e] = (x.get(r * size + e) - mu) * invStd * scale.get(broadcastIndex(scaleDims, e)) +
                        (bias ? bias->get(broadcastIndex(biasDims, e)) : 0.0);
  }
}

void checkLayerNorm(DType dtype, DType statType, const Dims &dims, size_t axis,
                    const Dims &scaleDims, const Dims *biasDims) {
  Buffer x(dtype, dims), scale(dtype, scaleDims), bias(dtype, biasDims ? *biasDims : Dims{}),
      y(dtype, dims);
  Dims statDims = dims;
  for (size_t i = axis; i < dims.size(); ++i)
    statDims[i] = 1;
  Buffer mean(statType, statDims), inv(statType, statDims);
  x.fillRandom(21);
  scale.fillRandom(22, 0.5, 2.0);
  bias.fillRandom(23);
  const float eps = 1e-5f;
  std::vector<double> yRef, meanRef, invRef;
  refLayerNorm(x, dims, axis, scale, scaleDims, biasDims ? &bias : nullptr,
               biasDims ? *biasDims : Dims{}, eps, yRef, meanRef, invRef);
  TensorRef biasRef = bias.ref();
  const Status status = layerNorm(x.ref(), scale.ref(), biasDims ? &biasRef : nullptr,
                                  static_cast<int64_t>(axis), eps, y.ref(), mean.ref(), inv.ref());
  ASSERT_TRUE(status.isOk()) << status.message();
  const std::string what = std::string(dtypeName(dtype)) + "/" + dtypeName(statType) +
                           " layer_norm rank " + std::to_string(dims.size()) + " axis " +
                           std::to_string(axis) + " scale rank " +
                           std::to_string(scaleDims.size()) + (biasDims ? " with bias" : "");
  expectClose(yRef, y, dtype, what + " (y)");
  // Statistics are computed in the input's compute type, then stored.
  const DType coarser = tolerance(dtype) > tolerance(statType) ? dtype : statType;
  expectClose(meanRef, mean, coarser, what + " (mean)");
  expectClose(invRef, inv, coarser, what + " (inv_std_dev)");
}

TEST(NormalizationKernels, LayerNormAxesAndBroadcasts) {
  const Dims dims = {2, 3, 4};
  const Dims full0 = {2, 3, 4}, full1 = {3, 4}, full2 = {4}, one = {1}, col = {3, 1};
  struct Case {
    size_t axis;
    Dims scale;
    const Dims *bias;
  };
  const std::vector<Case> cases = {
      {0, full0, &full0}, {0, full0, nullptr}, {0, full2, &one},  {1, full1, &full1},
      {1, full2, &col},   {1, col, nullptr},   {1, one, &full2},  {2, full2, &full2},
      {2, one, nullptr},  {2, full2, &one},
  };
  for (DType dtype : {DType::F32, DType::F64})
    for (const Case &c : cases)
      checkLayerNorm(dtype, dtype, dims, c.axis, c.scale, c.bias);
}

TEST(NormalizationKernels, LayerNormMixedPrecision) {
  // 16-bit activations with f32 statistics (ONNX stash_type), and the reverse.
  const Dims dims = {4, 96}, scale = {96};
  checkLayerNorm(DType::BF16, DType::F32, dims, 1, scale, &scale);
  checkLayerNorm(DType::F16, DType::F32, dims, 1, scale, &scale);
  checkLayerNorm(DType::F32, DType::F64, dims, 1, scale, nullptr);
  checkLayerNorm(DType::F64, DType::F32, dims, 1, scale, nullptr);
}

TEST(NormalizationKernels, LayerNormLongRows) {
  const Dims dims = {3, 4096}, scale = {4096};
  checkLayerNorm(DType::F32, DType::F32, dims, 1, scale, &scale);
}

TEST(NormalizationKernels, LayerNormErrors) {
  Buffer x(DType::F32, {2, 3}), scale(DType::F32, {3}), y(DType::F32, {2, 3}),
      mean(DType::F32, {2, 1}), inv(DType::F64, {2, 1}), scale64(DType::F64, {3});
  EXPECT_FALSE(layerNorm(x.ref(), scale.ref(), nullptr, 2, 1e-5f, y.ref(), mean.ref(), mean.ref())
                   .isOk());
  EXPECT_FALSE(layerNorm(x.ref(), scale.ref(), nullptr, 1, 1e-5f, y.ref(), mean.ref(), inv.ref())
                   .isOk());
  EXPECT_FALSE(
      layerNorm(x.ref(), scale64.ref(), nullptr, 1, 1e-5f, y.ref(), mean.ref(), mean.ref()).isOk());
}

} // namespace
