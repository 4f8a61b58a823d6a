//===- LossGradKernels.cu - gradients of the classification losses ---------===//
//
// The backward kernels of LossKernels.cu with the CPU's conventions and
// formulas (LossGradKernels.cpp): each non-ignored position's gradient at
// its label is g = w[t] * -(dloss[/ weight sum]) in the tensor's type;
// softmax cross-entropy's is onehot(g) - exp(log_prob) * g. One thread per
// result element writes it directly (no zeroing pass). For "mean" the
// weight sum runs in double over positions in row-major order, as on the
// CPU: thread 0 of every block sums into shared memory (each block repeats
// the short sequential sum rather than reading another kernel's result,
// so the launch needs no scratch memory and stays one kernel) and checks
// every label, raising LabelOutOfRange for a bad one.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/LossShape.h"
#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/math/FastMath.h"

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

struct GradParams {
  LossShape shape;
  Reduction reduction;
  bool ignores;
  int64_t ignoreIndex;
  KernelFault *fault;
  uint32_t launch;
};

/// The block's scale, -(dloss[/ weight sum]) (unused for "none"), after
/// thread 0 checked the labels and summed the weights.
template <typename T, typename L>
__device__ inline ComputeType<T> blockScale(const GradParams &q, const L *labels, const T *w,
                                            const T *dloss) {
  using C = ComputeType<T>;
  __shared__ double sharedScale;
  if (threadIdx.x == 0) {
    double weightSum = 0;
    for (int64_t p = 0; p < q.shape.n * q.shape.d; ++p) {
      const int64_t label = static_cast<int64_t>(labels[p]);
      if (q.ignores && label == q.ignoreIndex)
        continue;
      if (label < 0 || label >= q.shape.c) {
        raiseFault(q.fault, q.launch, FaultCode::LabelOutOfRange, label, p, q.shape.c);
        continue;
      }
      weightSum += w ? load(w + label) : C(1);
    }
    // torch divides in the tensor's type: -(grad_output / total_weight).
    const C scalar = q.reduction == Reduction::None ? C(0) : load(dloss);
    const C scale = -(q.reduction == Reduction::Mean ? scalar / static_cast<C>(weightSum) : scalar);
    sharedScale = static_cast<double>(scale);
  }
  __syncthreads();
  return static_cast<C>(sharedScale);
}

/// g at position p (whose label is valid and not ignored).
template <typename T>
__device__ inline ComputeType<T> gradientAt(const GradParams &q, const T *w, const T *dloss,
                                            ComputeType<T> scale, int64_t p, int64_t label) {
  const ComputeType<T> s = q.reduction == Reduction::None ? -load(dloss + p) : scale;
  return w ? load(w + label) * s : s;
}

/// Element e of [N, C, D] and whether its position takes a gradient.
template <typename L>
__device__ inline bool locate(const GradParams &q, const L *labels, int64_t e, int64_t &p,
                              int64_t &c, int64_t &label) {
  const int64_t d = e % q.shape.d, nc = e / q.shape.d;
  c = nc % q.shape.c;
  p = (nc / q.shape.c) * q.shape.d + d;
  label = static_cast<int64_t>(labels[p]);
  return !(q.ignores && label == q.ignoreIndex) && label >= 0 && label < q.shape.c;
}

template <typename T, typename L>
__global__ void nllGradKernel(GradParams q, const L *labels, const T *w, const T *dloss, T *out,
                              int64_t total) {
  using C = ComputeType<T>;
  const C scale = blockScale(q, labels, w, dloss);
  FSDP_GRID_STRIDE(e, total) {
    int64_t p, c, label;
    const bool takes = locate(q, labels, e, p, c, label);
    store(out + e, takes && c == label ? gradientAt(q, w, dloss, scale, p, label) : C(0));
  }
}

template <typename T, typename L>
__global__ void softmaxCrossEntropyGradKernel(GradParams q, const T *logProb, const L *labels,
                                              const T *w, const T *dloss, T *out, int64_t total) {
  using C = ComputeType<T>;
  const C scale = blockScale(q, labels, w, dloss);
  FSDP_GRID_STRIDE(e, total) {
    int64_t p, c, label;
    if (!locate(q, labels, e, p, c, label)) {
      store(out + e, C(0));
      continue;
    }
    const C g = gradientAt(q, w, dloss, scale, p, label);
    store(out + e, (c == label ? g : C(0)) - expOf(load(logProb + e)) * g);
  }
}

GradParams paramsOf(const KernelContext &ctx, Reduction reduction,
                    std::optional<int64_t> ignoreIndex) {
  GradParams q;
  q.reduction = reduction;
  q.ignores = ignoreIndex.has_value();
  q.ignoreIndex = ignoreIndex.value_or(0);
  q.fault = ctx.fault;
  q.launch = ctx.launch;
  return q;
}

/// Dispatches a loss gradient on (value dtype, label dtype).
template <typename Fn> Status dispatchLossGrad(DType values, DType labels, Fn &&fn) {
  return dispatchFloat(
      values,
      [&](auto tag) {
        return dispatchIndex(
            labels, [&](auto labelTag) { return fn(tag, labelTag); }, "loss_grad labels");
      },
      "loss_grad");
}

} // namespace

Status softmaxCrossEntropyGrad(const KernelContext &ctx, const TensorRef &logProb,
                               const TensorRef &labels, const TensorRef *weights,
                               const TensorRef &dloss, Reduction reduction,
                               std::optional<int64_t> ignoreIndex, const TensorRef &dscores) {
  if (logProb.dtype != dscores.dtype || logProb.numElements() != dscores.numElements())
    return Status::error("softmax_cross_entropy_grad: dscores must have log_prob's type");
  GradParams q = paramsOf(ctx, reduction, ignoreIndex);
  FSDP_RETURN_IF_ERROR(lossShape("loss_grad", logProb, labels, weights, dloss, reduction, q.shape));
  const int64_t total = dscores.numElements();
  return dispatchLossGrad(logProb.dtype, labels.dtype, [&](auto tag, auto labelTag) {
    using T = decltype(tag);
    using L = decltype(labelTag);
    return launchElementwise(ctx, "loss_grad", total, softmaxCrossEntropyGradKernel<T, L>, q,
                             logProb.as<const T>(), labels.as<const L>(),
                             weights ? weights->as<const T>() : nullptr, dloss.as<const T>(),
                             dscores.as<T>(), total);
  });
}

Status nllLossGrad(const KernelContext &ctx, const TensorRef &target, const TensorRef *weight,
                   const TensorRef &dloss, Reduction reduction, std::optional<int64_t> ignoreIndex,
                   const TensorRef &dinput) {
  GradParams q = paramsOf(ctx, reduction, ignoreIndex);
  FSDP_RETURN_IF_ERROR(lossShape("loss_grad", dinput, target, weight, dloss, reduction, q.shape));
  const int64_t total = dinput.numElements();
  return dispatchLossGrad(dinput.dtype, target.dtype, [&](auto tag, auto labelTag) {
    using T = decltype(tag);
    using L = decltype(labelTag);
    return launchElementwise(ctx, "loss_grad", total, nllGradKernel<T, L>, q,
                             target.as<const L>(), weight ? weight->as<const T>() : nullptr,
                             dloss.as<const T>(), dinput.as<T>(), total);
  });
}

FSDP_CUDA_NAMESPACE_END
