//===- TorchExportKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status math(const KernelContext &, MathKind, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: math is not implemented yet");
}

Status geluGrad(const KernelContext &, bool, const TensorRef &, const TensorRef &, const TensorRef
    &) {
  return Status::error("cuda: geluGrad is not implemented yet");
}

Status pad(const KernelContext &, const TensorRef &, const TensorRef &, const int64_t *, const
    TensorRef &) {
  return Status::error("cuda: pad is not implemented yet");
}

Status tile(const KernelContext &, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: tile is not implemented yet");
}

Status cumsum(const KernelContext &, const TensorRef &, int64_t, bool, bool, const TensorRef &) {
  return Status::error("cuda: cumsum is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
