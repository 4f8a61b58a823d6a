//===- LossKernels.cpp - classification losses on the CPU -----------------===//
//
// ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss, following the
// ONNX reference implementation term for term: with input [N, C, d...] and
// labels [N, d...] (flattened here to [N, C, D] and [N, D]), each position
// contributes loss = -input[n, t, d] * w[t] with t = label[n, d] and w the
// class weights (1 without them); a label equal to ignore_index contributes
// 0 with weight 0; "mean" divides the summed loss by the summed weights of
// the non-ignored positions (so without weights, by their count; 0/0 gives
// NaN when everything is ignored, as in ONNX and torch). Softmax
// cross-entropy is log-softmax over the class axis (written to log_prob)
// followed by the same loss. A label outside [0, C) that is not ignored is
// reported as an error naming it. Sums run sequentially over positions in
// row-major order, in double for floating-point types.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/backends/LossShape.h"

#include <algorithm>
#include <type_traits>

namespace fsdp::rt::cpu {
namespace {

/// [N, C, D] view of the class-score layout.
template <typename T, typename L>
Status nllImpl(const TensorRef &input, const TensorRef &target, const TensorRef *weight,
               Reduction reduction, std::optional<int64_t> ignoreIndex, const TensorRef &loss,
               const LossShape &s) {
  using C = ComputeType<T>;
  const T *x = input.as<T>();
  const L *labels = target.as<L>();
  const T *w = weight ? weight->as<T>() : nullptr;
  T *lossData = loss.as<T>();
  // Floats accumulate in double: a float running sum over thousands of
  // positions drifts past 1e-5 relative (ONNX's reference and torch both sum
  // more accurately than that); the order stays fixed, so results stay
  // deterministic.
  using Acc = std::conditional_t<std::is_floating_point_v<C>, double, C>;
  Acc lossSum = 0, weightSum = 0;
  for (int64_t n = 0; n < s.n; ++n) {
    for (int64_t d = 0; d < s.d; ++d) {
      const int64_t position = n * s.d + d;
      const int64_t label = static_cast<int64_t>(labels[position]);
      C value = 0, classWeight = 0;
      if (!ignoreIndex || label != *ignoreIndex) {
        if (label < 0 || label >= s.c)
          return Status::error(cat("loss: label ", label, " at position ", position,
                                   " is outside [0, ", s.c, ")"));
        classWeight = w ? load(w + label) : C(1);
        value = -load(x + (n * s.c + label) * s.d + d) * classWeight;
      }
      if (reduction == Reduction::None)
        store(lossData + position, value);
      lossSum += value;
      weightSum += classWeight;
    }
  }
  if (reduction == Reduction::Sum)
    store(lossData, static_cast<C>(lossSum));
  else if (reduction == Reduction::Mean)
    store(lossData, static_cast<C>(lossSum / weightSum));
  return Status::ok();
}

} // namespace

Status nllLoss(const TensorRef &input, const TensorRef &target, const TensorRef *weight,
               Reduction reduction, std::optional<int64_t> ignoreIndex, const TensorRef &loss) {
  LossShape s;
  FSDP_RETURN_IF_ERROR(lossShape("loss", input, target, weight, loss, reduction, s));
  return dispatchFloat(
      input.dtype,
      [&](auto tag) {
        return dispatchIndex(
            target.dtype,
            [&](auto labelTag) {
              return nllImpl<decltype(tag), decltype(labelTag)>(input, target, weight, reduction,
                                                                ignoreIndex, loss, s);
            },
            "loss labels");
      },
      "loss");
}

Status softmaxCrossEntropy(const TensorRef &scores, const TensorRef &labels,
                           const TensorRef *weights, Reduction reduction,
                           std::optional<int64_t> ignoreIndex, const TensorRef &loss,
                           const TensorRef &logProb) {
  if (logProb.dtype != scores.dtype || logProb.numElements() != scores.numElements())
    return Status::error("softmax_cross_entropy: log_prob must have the scores' type");
  if (scores.rank < 2)
    return Status::error("softmax_cross_entropy: scores must be [N, C, d...]");
  // log_prob has the scores' shape; the class axis is 1.
  TensorRef logProbView = logProb;
  logProbView.rank = scores.rank;
  std::copy(scores.dims, scores.dims + scores.rank, logProbView.dims);
  FSDP_RETURN_IF_ERROR(softmax(scores, 1, /*log=*/true, logProbView));
  return nllLoss(logProbView, labels, weights, reduction, ignoreIndex, loss);
}

} // namespace fsdp::rt::cpu
