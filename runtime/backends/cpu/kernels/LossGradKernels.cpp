//===- LossGradKernels.cpp - gradients of the classification losses -------===//
//
// The backward kernels of LossKernels.cpp's NegativeLogLikelihoodLoss and
// SoftmaxCrossEntropyLoss, with the forward's conventions: input [N, C,
// d...] viewed as [N, C, D], labels [N, D] (i32/i64), optional class
// weights [C], ignore_index positions contributing nothing, and "mean"
// dividing by the summed weights of the non-ignored positions (summed in
// double in row-major position order as the forward sums them). Each
// non-ignored position's gradient is g = w[t] * -(dloss[/ weights]), in
// the tensor's type, which is what torch's nll_loss_backward writes at the
// label; softmax
// cross-entropy then applies log-softmax's backward to that one-hot
// gradient as torch composes them: dscores = onehot(g) - exp(log_prob) * g
// (the class sum of a one-hot row is g exactly). Labels are checked before
// anything is written.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"
#include "runtime/backends/LossShape.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

/// Per-position gradient at the label, g = w[t] * -(dloss[/ weight sum]),
/// or nothing for an ignored position. Construction checks every label and
/// sums the weights (in double, row-major, as the forward does).
template <typename T, typename L> class LabelGradients {
public:
  using C = ComputeType<T>;

  Status init(const TensorRef &labels, const TensorRef *weights, const TensorRef &dloss,
              Reduction reduction, std::optional<int64_t> ignoreIndex, const LossShape &s) {
    labels_ = labels.as<const L>();
    weights_ = weights ? weights->as<const T>() : nullptr;
    dloss_ = dloss.as<const T>();
    reduction_ = reduction;
    ignoreIndex_ = ignoreIndex;
    double weightSum = 0;
    for (int64_t p = 0; p < s.n * s.d; ++p) {
      const int64_t label = static_cast<int64_t>(labels_[p]);
      if (ignored(label))
        continue;
      if (label < 0 || label >= s.c)
        return Status::error(cat("loss_grad: label ", label, " at position ", p,
                                 " is outside [0, ", s.c, ")"));
      weightSum += weights_ ? load(weights_ + label) : C(1);
    }
    // torch divides in the tensor's type: -(grad_output / total_weight).
    const C scalar = reduction == Reduction::None ? C(0) : load(dloss_);
    scale_ = -(reduction == Reduction::Mean ? scalar / static_cast<C>(weightSum) : scalar);
    return Status::ok();
  }

  int64_t label(int64_t position) const { return static_cast<int64_t>(labels_[position]); }
  bool ignored(int64_t label) const { return ignoreIndex_ && label == *ignoreIndex_; }
  /// g at a non-ignored position whose label is `label`.
  C at(int64_t position, int64_t label) const {
    const C scale = reduction_ == Reduction::None ? -load(dloss_ + position) : scale_;
    return weights_ ? load(weights_ + label) * scale : scale;
  }

private:
  const L *labels_ = nullptr;
  const T *weights_ = nullptr;
  const T *dloss_ = nullptr;
  Reduction reduction_ = Reduction::None;
  std::optional<int64_t> ignoreIndex_;
  C scale_ = 0;
};

template <typename T, typename L>
Status nllGradImpl(const TensorRef &target, const TensorRef *weight, const TensorRef &dloss,
                   Reduction reduction, std::optional<int64_t> ignoreIndex,
                   const TensorRef &dinput, const LossShape &s) {
  LabelGradients<T, L> grads;
  FSDP_RETURN_IF_ERROR(grads.init(target, weight, dloss, reduction, ignoreIndex, s));
  if (dinput.byteSize() > 0)
    std::memset(dinput.data, 0, dinput.byteSize());
  T *out = dinput.as<T>();
  for (int64_t n = 0; n < s.n; ++n)
    for (int64_t d = 0; d < s.d; ++d) {
      const int64_t position = n * s.d + d, label = grads.label(position);
      if (!grads.ignored(label))
        store(out + (n * s.c + label) * s.d + d, grads.at(position, label));
    }
  return Status::ok();
}

template <typename T, typename L>
Status softmaxCrossEntropyGradImpl(const TensorRef &logProb, const TensorRef &labels,
                                   const TensorRef *weights, const TensorRef &dloss,
                                   Reduction reduction, std::optional<int64_t> ignoreIndex,
                                   const TensorRef &dscores, const LossShape &s) {
  using C = ComputeType<T>;
  LabelGradients<T, L> grads;
  FSDP_RETURN_IF_ERROR(grads.init(labels, weights, dloss, reduction, ignoreIndex, s));
  const T *lp = logProb.as<const T>();
  T *out = dscores.as<T>();
  // One element of dscores: torch's onehot(g) - exp(log_prob) * g.
  auto element = [](int64_t c, int64_t label, C g, bool skip, C logProb) {
    return skip ? C(0) : (c == label ? g : C(0)) - expOf(logProb) * g;
  };
  // Samples split across the rank's threads. Every element is its own, so
  // the loops put the contiguous index innermost (the classes when D is 1,
  // the positions otherwise), as wide loops; neither the order nor the
  // split changes a bit.
  return parallelFor(0, s.n, rowGrain(s.c * s.d), [&](int64_t firstSample, int64_t endSample) {
    std::vector<C> gradAt(s.d);
    std::vector<int64_t> labelAt(s.d);
    std::vector<uint8_t> skipAt(s.d);
    for (int64_t n = firstSample; n < endSample; ++n) {
      for (int64_t d = 0; d < s.d; ++d) {
        const int64_t position = n * s.d + d;
        labelAt[d] = grads.label(position);
        skipAt[d] = grads.ignored(labelAt[d]);
        gradAt[d] = skipAt[d] ? C(0) : grads.at(position, labelAt[d]);
      }
      if (s.d == 1) {
        const T *x = lp + n * s.c;
        T *y = out + n * s.c;
        runWide([&] {
          for (int64_t c = 0; c < s.c; ++c)
            store(y + c, element(c, labelAt[0], gradAt[0], skipAt[0], load(x + c)));
        });
        continue;
      }
      for (int64_t c = 0; c < s.c; ++c) {
        const T *x = lp + (n * s.c + c) * s.d;
        T *y = out + (n * s.c + c) * s.d;
        runWide([&] {
          for (int64_t d = 0; d < s.d; ++d)
            store(y + d, element(c, labelAt[d], gradAt[d], skipAt[d], load(x + d)));
        });
      }
    }
  });
}

/// Dispatches a loss gradient on (value dtype, label dtype).
template <typename Fn>
Status dispatchLossGrad(DType values, DType labels, Fn &&fn) {
  return dispatchFloat(
      values,
      [&](auto tag) {
        return dispatchIndex(
            labels, [&](auto labelTag) { return fn(tag, labelTag); }, "loss_grad labels");
      },
      "loss_grad");
}

} // namespace

Status softmaxCrossEntropyGrad(const TensorRef &logProb, const TensorRef &labels,
                               const TensorRef *weights, const TensorRef &dloss,
                               Reduction reduction, std::optional<int64_t> ignoreIndex,
                               const TensorRef &dscores) {
  if (logProb.dtype != dscores.dtype || logProb.numElements() != dscores.numElements())
    return Status::error("softmax_cross_entropy_grad: dscores must have log_prob's type");
  LossShape s;
  FSDP_RETURN_IF_ERROR(lossShape("loss_grad", logProb, labels, weights, dloss, reduction, s));
  return dispatchLossGrad(logProb.dtype, labels.dtype, [&](auto tag, auto labelTag) {
    return softmaxCrossEntropyGradImpl<decltype(tag), decltype(labelTag)>(
        logProb, labels, weights, dloss, reduction, ignoreIndex, dscores, s);
  });
}

Status nllLossGrad(const TensorRef &target, const TensorRef *weight, const TensorRef &dloss,
                   Reduction reduction, std::optional<int64_t> ignoreIndex,
                   const TensorRef &dinput) {
  LossShape s;
  FSDP_RETURN_IF_ERROR(lossShape("loss_grad", dinput, target, weight, dloss, reduction, s));
  return dispatchLossGrad(dinput.dtype, target.dtype, [&](auto tag, auto labelTag) {
    return nllGradImpl<decltype(tag), decltype(labelTag)>(target, weight, dloss, reduction,
                                                           ignoreIndex, dinput, s);
  });
}

} // namespace fsdp::rt::cpu
