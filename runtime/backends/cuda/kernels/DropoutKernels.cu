//===- DropoutKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status dropout(const KernelContext &, const TensorRef &, float, bool, uint64_t, const TensorRef &,
    const TensorRef &) {
  return Status::error("cuda: dropout is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
