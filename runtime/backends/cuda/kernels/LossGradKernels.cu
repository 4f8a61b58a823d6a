//===- LossGradKernels.cu - gradients of the classification losses ---------===//
//
// The backward kernels of LossKernels.cu with the CPU's conventions and
// formulas (LossGradKernels.cpp): each non-ignored position's gradient at
// its label is g = w[t] * -(dloss[/ weight sum]) in the tensor's type;
// softmax cross-entropy's is onehot(g) - exp(log_prob) * g. One thread per
// result element writes it directly (no zeroing pass); the thread of a
// position's class-0 element checks its label and raises LabelOutOfRange
// for a bad one (that position's elements are written as zeros). Only
// "mean" needs a sum over positions, and each block computes it for
// itself (no scratch memory, one kernel): without class weights it is a
// count of the taken positions, exact in any order, so the block's
// threads count a share each and combine them in a fixed tree; with
// weights it runs in double over positions in row-major order, as on the
// CPU (the CPU's bits need that order; OrderedSum.cuh).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/LossShape.h"
#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/backends/cuda/kernels/OrderedSum.cuh"
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

/// Whether a position with this label takes a gradient (not ignored, in
/// range); raises LabelOutOfRange for a label out of range when `report`.
__device__ inline bool takesLabel(const GradParams &q, int64_t label, int64_t p, bool report) {
  if (q.ignores && label == q.ignoreIndex)
    return false;
  if (label >= 0 && label < q.shape.c)
    return true;
  if (report)
    raiseFault(q.fault, q.launch, FaultCode::LabelOutOfRange, label, p, q.shape.c);
  return false;
}

/// The scale -(dloss[/ weight sum]) of "sum" and "mean" (unused for
/// "none"). Every thread of the block calls it (it synchronizes the block
/// for "mean").
template <typename T, typename L>
__device__ inline ComputeType<T> blockScale(const GradParams &q, const L *labels, const T *w,
                                            const T *dloss) {
  using C = ComputeType<T>;
  if (q.reduction == Reduction::None)
    return C(0);
  // torch divides in the tensor's type: -(grad_output / total_weight).
  const C scalar = load(dloss);
  if (q.reduction == Reduction::Sum)
    return -scalar;
  const int64_t positions = q.shape.n * q.shape.d;
  if (w) {
    double weightSum[1];
    orderedBlockSums<1>(
        positions,
        [&](int64_t p, double(&terms)[1]) {
          const int64_t label = static_cast<int64_t>(labels[p]);
          if (!takesLabel(q, label, p, false))
            return false;
          terms[0] = load(w + label);
          return true;
        },
        weightSum);
    return -(scalar / static_cast<C>(weightSum[0]));
  }
  __shared__ int64_t counts[kBlockThreads];
  int64_t count = 0;
  for (int64_t p = threadIdx.x; p < positions; p += blockDim.x)
    count += takesLabel(q, static_cast<int64_t>(labels[p]), p, false) ? 1 : 0;
  counts[threadIdx.x] = count;
  __syncthreads();
  for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
    if (threadIdx.x < stride)
      counts[threadIdx.x] += counts[threadIdx.x + stride];
    __syncthreads();
  }
  // The count is the CPU's sum of ones in double, exactly.
  return -(scalar / static_cast<C>(static_cast<double>(counts[0])));
}

/// g at position p (whose label is valid and not ignored).
template <typename T>
__device__ inline ComputeType<T> gradientAt(const GradParams &q, const T *w, const T *dloss,
                                            ComputeType<T> scale, int64_t p, int64_t label) {
  const ComputeType<T> s = q.reduction == Reduction::None ? -load(dloss + p) : scale;
  return w ? load(w + label) * s : s;
}

/// Element e of [N, C, D] and whether its position takes a gradient; the
/// class-0 element reports its position's bad label.
template <typename L>
__device__ inline bool locate(const GradParams &q, const L *labels, int64_t e, int64_t &p,
                              int64_t &c, int64_t &label) {
  const int64_t d = e % q.shape.d, nc = e / q.shape.d;
  c = nc % q.shape.c;
  p = (nc / q.shape.c) * q.shape.d + d;
  label = static_cast<int64_t>(labels[p]);
  return takesLabel(q, label, p, c == 0);
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
