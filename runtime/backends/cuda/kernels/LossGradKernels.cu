//===- LossGradKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status softmaxCrossEntropyGrad(const KernelContext &, const TensorRef &, const TensorRef &, const
    TensorRef *, const TensorRef &, Reduction, std::optional<int64_t>, const TensorRef &) {
  return Status::error("cuda: softmaxCrossEntropyGrad is not implemented yet");
}

Status nllLossGrad(const KernelContext &, const TensorRef &, const TensorRef *, const TensorRef &,
    Reduction, std::optional<int64_t>, const TensorRef &) {
  return Status::error("cuda: nllLossGrad is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
