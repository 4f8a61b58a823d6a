//===- OptimizerKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status adamw(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef &, const
    TensorRef &, const TensorRef &, const TensorRef &, const AdamWConfig &, const TensorRef &, const
    TensorRef &, const TensorRef &) {
  return Status::error("cuda: adamw is not implemented yet");
}

Status sgd(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef *, const
    TensorRef &, const SgdConfig &, const TensorRef &, const TensorRef *) {
  return Status::error("cuda: sgd is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
