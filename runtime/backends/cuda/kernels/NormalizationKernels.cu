//===- NormalizationKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status softmax(const KernelContext &, const TensorRef &, int64_t, bool, const TensorRef &) {
  return Status::error("cuda: softmax is not implemented yet");
}

Status layerNorm(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef *,
    int64_t, float, const TensorRef &, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: layerNorm is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
