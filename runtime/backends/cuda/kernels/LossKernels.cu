//===- LossKernels.cu - classification losses on the GPU -------------------===//
//
// ONNX NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss with the CPU
// kernels' conventions (LossKernels.cpp; the [N, C, D] view of
// runtime/backends/LossShape.h). "none" writes each position's loss from
// its own thread. "sum" and "mean" accumulate in double over positions in
// row-major order, as the CPU does, so one block runs the sum
// (OrderedSum.cuh: the positions' terms computed in parallel, added in
// order): the result is the CPU's bits. A label outside [0, C) that is
// not ignored is a
// LabelOutOfRange fault; its position contributes nothing. Softmax
// cross-entropy is the CUDA log-softmax (NormalizationKernels.cu) followed
// by the same loss, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/LossShape.h"
#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/backends/cuda/kernels/OrderedSum.cuh"

#include <type_traits>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

/// What a loss kernel reads besides its operands.
struct LossParams {
  LossShape shape;
  bool ignores;
  int64_t ignoreIndex;
  KernelFault *fault;
  uint32_t launch;
};

/// Position p's loss and class weight (0 and 0 when ignored or faulty).
template <typename T, typename L>
__device__ inline void positionLoss(const LossParams &q, const T *x, const L *labels,
                                    const T *w, int64_t p, ComputeType<T> &value,
                                    ComputeType<T> &classWeight) {
  using C = ComputeType<T>;
  value = 0;
  classWeight = 0;
  const int64_t label = static_cast<int64_t>(labels[p]);
  if (q.ignores && label == q.ignoreIndex)
    return;
  if (label < 0 || label >= q.shape.c) {
    raiseFault(q.fault, q.launch, FaultCode::LabelOutOfRange, label, p, q.shape.c);
    return;
  }
  const int64_t n = p / q.shape.d, d = p % q.shape.d;
  classWeight = w ? load(w + label) : C(1);
  value = -load(x + (n * q.shape.c + label) * q.shape.d + d) * classWeight;
}

template <typename T, typename L>
__global__ void lossNoneKernel(LossParams q, const T *x, const L *labels, const T *w, T *loss) {
  FSDP_GRID_STRIDE(p, q.shape.n * q.shape.d) {
    ComputeType<T> value, classWeight;
    positionLoss(q, x, labels, w, p, value, classWeight);
    store(loss + p, value);
  }
}

/// The CPU's sequential double sums of "sum" and "mean", on one block:
/// every position adds its loss and class weight (0 and 0 when ignored).
template <typename T, typename L>
__global__ void lossSumKernel(LossParams q, const T *x, const L *labels, const T *w, T *loss,
                              bool mean) {
  using C = ComputeType<T>;
  static_assert(std::is_floating_point_v<C>, "the CPU accumulates floats in double");
  double sums[2];
  orderedBlockSums<2>(
      q.shape.n * q.shape.d,
      [&](int64_t p, double(&terms)[2]) {
        C value, classWeight;
        positionLoss(q, x, labels, w, p, value, classWeight);
        terms[0] = value;
        terms[1] = classWeight;
        return true;
      },
      sums);
  if (threadIdx.x == 0)
    store(loss, static_cast<C>(mean ? sums[0] / sums[1] : sums[0]));
}

} // namespace

Status nllLoss(const KernelContext &ctx, const TensorRef &input, const TensorRef &target,
               const TensorRef *weight, Reduction reduction, std::optional<int64_t> ignoreIndex,
               const TensorRef &loss) {
  LossParams q;
  FSDP_RETURN_IF_ERROR(lossShape("loss", input, target, weight, loss, reduction, q.shape));
  q.ignores = ignoreIndex.has_value();
  q.ignoreIndex = ignoreIndex.value_or(0);
  q.fault = ctx.fault;
  q.launch = ctx.launch;
  return dispatchFloat(
      input.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return dispatchIndex(
            target.dtype,
            [&](auto labelTag) {
              using L = decltype(labelTag);
              const T *w = weight ? weight->as<const T>() : nullptr;
              if (reduction == Reduction::None)
                return launchElementwise(ctx, "loss", q.shape.n * q.shape.d,
                                         lossNoneKernel<T, L>, q, input.as<const T>(),
                                         target.as<const L>(), w, loss.as<T>());
              return launch(ctx, "loss", lossSumKernel<T, L>, dim3(1), dim3(kBlockThreads), q,
                            input.as<const T>(), target.as<const L>(), w, loss.as<T>(),
                            reduction == Reduction::Mean);
            },
            "loss labels");
      },
      "loss");
}

Status softmaxCrossEntropy(const KernelContext &ctx, const TensorRef &scores,
                           const TensorRef &labels, const TensorRef *weights, Reduction reduction,
                           std::optional<int64_t> ignoreIndex, const TensorRef &loss,
                           const TensorRef &logProb) {
  if (logProb.dtype != scores.dtype || logProb.numElements() != scores.numElements())
    return Status::error("softmax_cross_entropy: log_prob must have the scores' type");
  if (scores.rank < 2)
    return Status::error("softmax_cross_entropy: scores must be [N, C, d...]");
  // log_prob has the scores' shape; the class axis is 1.
  TensorRef logProbView = logProb;
  logProbView.rank = scores.rank;
  for (int i = 0; i < scores.rank; ++i)
    logProbView.dims[i] = scores.dims[i];
  FSDP_RETURN_IF_ERROR(softmax(ctx, scores, 1, /*log=*/true, logProbView));
  return nllLoss(ctx, logProbView, labels, weights, reduction, ignoreIndex, loss);
}

FSDP_CUDA_NAMESPACE_END
