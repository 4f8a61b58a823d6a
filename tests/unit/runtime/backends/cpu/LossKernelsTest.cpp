//===- LossKernelsTest.cpp - NLL and softmax cross-entropy vs ONNX --------===//
//
// Checks NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss against a
// double-precision transcription of the ONNX reference implementation, over
// [N, C], [N, C, d1] and [N, C, d1, d2] layouts, i32 and i64 labels, with
// and without class weights and ignore_index (inside and outside [0, C)),
// for every reduction; plus the all-ignored mean (NaN) and the error on an
// out-of-range label.
//
//===----------------------------------------------------------------------===//

#include "tests/unit/runtime/backends/cpu/KernelTestUtil.h"
#include "runtime/backends/cpu/CpuKernels.h"

#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <string>
#include <vector>

using namespace fsdp::rt;
using namespace fsdp::rt::cpu;

namespace {

using kerneltest::Dims;
using kerneltest::numElements;

using Buffer = kerneltest::TestTensor;

/// Log-softmax over axis 1 of [N, C, D...], in double.
std::vector<double> refLogSoftmax(const Buffer &scores, int64_t n, int64_t c, int64_t d) {
  std::vector<double> out(scores.size());
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      double max = -INFINITY, sum = 0;
      for (int64_t k = 0; k < c; ++k)
        max = std::max(max, scores.get((i * c + k) * d + j));
      for (int64_t k = 0; k < c; ++k)
        sum += std::exp(scores.get((i * c + k) * d + j) - max);
      for (int64_t k = 0; k < c; ++k)
        out[(i * c + k) * d + j] = scores.get((i * c + k) * d + j) - max - std::log(sum);
    }
  return out;
}

/// ONNX's _compute_negative_log_likelihood_loss, transcribed: the loss
/// values ([N*D] for None, else one).
std::vector<double> refNll(const std::vector<double> &input, const Buffer &labels,
                           const Buffer *weights, Reduction reduction,
                           std::optional<int64_t> ignore, int64_t n, int64_t c, int64_t d) {
  std::vector<double> loss(n * d), gatherWeight(n * d);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t j = 0; j < d; ++j) {
      const int64_t t = static_cast<int64_t>(labels.get(i * d + j));
      const bool ignored = ignore && t == *ignore;
      const double w = ignored ? 0.0 : weights ? weights->get(t) : 1.0;
      loss[i * d + j] = ignored ? 0.0 : -input[(i * c + t) * d + j] * w;
      gatherWeight[i * d + j] = w;
    }
  if (reduction == Reduction::None)
    return loss;
  double sum = 0, weightSum = 0;
  for (int64_t i = 0; i < n * d; ++i) {
    sum += loss[i];
    weightSum += gatherWeight[i];
  }
  return {reduction == Reduction::Sum ? sum : sum / weightSum};
}

const char *reductionName(Reduction r) {
  return r == Reduction::None ? "none" : r == Reduction::Sum ? "sum" : "mean";
}

struct LossCase {
  Dims scores;
  bool weighted;
  std::optional<int64_t> ignore;
};

/// Runs both losses on one configuration and compares them with ONNX.
void checkLosses(DType dtype, DType labelType, const LossCase &lc, Reduction reduction) {
  const int64_t n = lc.scores[0], c = lc.scores[1];
  int64_t d = 1;
  Dims labelDims = {n};
  for (size_t i = 2; i < lc.scores.size(); ++i) {
    d *= lc.scores[i];
    labelDims.push_back(lc.scores[i]);
  }
  Buffer scores(dtype, lc.scores), logProb(dtype, lc.scores), labels(labelType, labelDims),
      weights(dtype, {c});
  std::mt19937 rng(static_cast<uint32_t>(n * 31 + c * 7 + d));
  std::uniform_real_distribution<double> real(-3.0, 3.0), positive(0.25, 2.0);
  std::uniform_int_distribution<int64_t> label(0, c - 1);
  for (int64_t i = 0; i < scores.size(); ++i)
    scores.set(i, real(rng));
  for (int64_t i = 0; i < c; ++i)
    weights.set(i, positive(rng));
  for (int64_t i = 0; i < labels.size(); ++i)
    labels.set(i, (lc.ignore && i % 3 == 1) ? *lc.ignore : label(rng)); // every third ignored
  Buffer loss(dtype, reduction == Reduction::None ? labelDims : Dims{});
  const Buffer *weightBuffer = lc.weighted ? &weights : nullptr;
  TensorRef weightRef = weights.ref();
  const TensorRef *weightArg = lc.weighted ? &weightRef : nullptr;
  const double tol = dtype == DType::F32 ? 1e-5 : 1e-12;
  const std::string what = std::string(dtypeName(dtype)) + "/" + dtypeName(labelType) + " rank " +
                           std::to_string(lc.scores.size()) + (lc.weighted ? " weighted" : "") +
                           (lc.ignore ? " ignore " + std::to_string(*lc.ignore) : "") + " " +
                           reductionName(reduction);
  auto compare = [&](const std::vector<double> &expected, const Buffer &got, const char *name) {
    ASSERT_EQ(static_cast<int64_t>(expected.size()), got.size()) << what;
    for (int64_t i = 0; i < got.size(); ++i)
      ASSERT_NEAR(got.get(i), expected[i], tol * std::max(1.0, std::abs(expected[i])))
          << what << " " << name << " at " << i;
  };

  // NLL on the scores as if they were log-probabilities.
  std::vector<double> scoreValues(scores.size());
  for (int64_t i = 0; i < scores.size(); ++i)
    scoreValues[i] = scores.get(i);
  Status status = nllLoss(scores.ref(), labels.ref(), weightArg, reduction, lc.ignore, loss.ref());
  ASSERT_TRUE(status.isOk()) << what << ": " << status.message();
  compare(refNll(scoreValues, labels, weightBuffer, reduction, lc.ignore, n, c, d), loss, "nll");

  // Softmax cross-entropy = log-softmax over axis 1, then NLL.
  const std::vector<double> logSoftmax = refLogSoftmax(scores, n, c, d);
  status = softmaxCrossEntropy(scores.ref(), labels.ref(), weightArg, reduction, lc.ignore,
                               loss.ref(), logProb.ref());
  ASSERT_TRUE(status.isOk()) << what << ": " << status.message();
  compare(logSoftmax, logProb, "log_prob");
  compare(refNll(logSoftmax, labels, weightBuffer, reduction, lc.ignore, n, c, d), loss,
          "softmax cross-entropy");
}

TEST(LossKernels, MatchOnnxReference) {
  const std::vector<Dims> layouts = {{5, 4}, {3, 4, 2}, {2, 3, 2, 2}, {16, 10, 7}};
  const std::vector<std::optional<int64_t>> ignores = {std::nullopt, int64_t{1}, int64_t{-100}};
  for (DType dtype : {DType::F32, DType::F64})
    for (DType labelType : {DType::I32, DType::I64})
      for (const Dims &layout : layouts)
        for (bool weighted : {false, true})
          for (const auto &ignore : ignores)
            for (Reduction reduction : {Reduction::None, Reduction::Sum, Reduction::Mean})
              checkLosses(dtype, labelType, {layout, weighted, ignore}, reduction);
}

TEST(LossKernels, AllIgnoredMeanIsNaN) {
  Buffer input(DType::F32, {2, 3}), labels(DType::I64, {2}), loss(DType::F32, {});
  labels.set(0, -1);
  labels.set(1, -1);
  ASSERT_TRUE(nllLoss(input.ref(), labels.ref(), nullptr, Reduction::Mean, int64_t{-1}, loss.ref())
                  .isOk());
  EXPECT_TRUE(std::isnan(loss.get(0)));
  ASSERT_TRUE(nllLoss(input.ref(), labels.ref(), nullptr, Reduction::Sum, int64_t{-1}, loss.ref())
                  .isOk());
  EXPECT_EQ(loss.get(0), 0.0);
}

TEST(LossKernels, OutOfRangeLabelIsAnError) {
  Buffer scores(DType::F32, {2, 3}), logProb(DType::F32, {2, 3}), labels(DType::I32, {2}),
      loss(DType::F32, {});
  for (int64_t bad : {3, -1}) {
    labels.set(0, 0);
    labels.set(1, static_cast<double>(bad));
    Status status = nllLoss(scores.ref(), labels.ref(), nullptr, Reduction::Mean, std::nullopt,
                            loss.ref());
    ASSERT_FALSE(status.isOk());
    EXPECT_NE(status.message().find("label " + std::to_string(bad)), std::string::npos)
        << status.message();
    // Ignoring a different value does not excuse it.
    status = softmaxCrossEntropy(scores.ref(), labels.ref(), nullptr, Reduction::Sum,
                                 int64_t{-100}, loss.ref(), logProb.ref());
    EXPECT_FALSE(status.isOk());
    // Ignoring exactly that value does.
    status = softmaxCrossEntropy(scores.ref(), labels.ref(), nullptr, Reduction::Sum, bad,
                                 loss.ref(), logProb.ref());
    EXPECT_TRUE(status.isOk()) << status.message();
  }
}

TEST(LossKernels, DTypeErrors) {
  Buffer scores(DType::F32, {2, 3}), floatLabels(DType::F32, {2}), loss(DType::F32, {}),
      loss64(DType::F64, {});
  Buffer labels(DType::I64, {2});
  EXPECT_FALSE(nllLoss(scores.ref(), floatLabels.ref(), nullptr, Reduction::Sum, std::nullopt,
                       loss.ref())
                   .isOk());
  EXPECT_FALSE(
      nllLoss(scores.ref(), labels.ref(), nullptr, Reduction::Sum, std::nullopt, loss64.ref())
          .isOk());
}

} // namespace
