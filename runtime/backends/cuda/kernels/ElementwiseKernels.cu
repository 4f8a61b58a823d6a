//===- ElementwiseKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status binary(const KernelContext &, BinaryKind, const TensorRef &, const TensorRef &, const
    TensorRef &) {
  return Status::error("cuda: binary is not implemented yet");
}

Status where(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef &, const
    TensorRef &) {
  return Status::error("cuda: where is not implemented yet");
}

Status unary(const KernelContext &, UnaryKind, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: unary is not implemented yet");
}

Status cast(const KernelContext &, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: cast is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
