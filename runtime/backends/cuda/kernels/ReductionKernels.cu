//===- ReductionKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status reduce(const KernelContext &, ReduceKind, const TensorRef &, const int64_t *, int, const
    TensorRef &) {
  return Status::error("cuda: reduce is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
