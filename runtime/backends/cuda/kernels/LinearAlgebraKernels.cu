//===- LinearAlgebraKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status matmul(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef &, bool,
    bool) {
  return Status::error("cuda: matmul is not implemented yet");
}

Status gemm(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef *, float,
    float, bool, bool, const TensorRef &) {
  return Status::error("cuda: gemm is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
