//===- ShapeKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status copy(const KernelContext &, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: copy is not implemented yet");
}

Status transpose(const KernelContext &, const TensorRef &, const int64_t *, const TensorRef &) {
  return Status::error("cuda: transpose is not implemented yet");
}

Status concat(const KernelContext &, const TensorRef *, int, int64_t, const TensorRef &) {
  return Status::error("cuda: concat is not implemented yet");
}

Status split(const KernelContext &, const TensorRef &, int64_t, const TensorRef *, int) {
  return Status::error("cuda: split is not implemented yet");
}

Status slice(const KernelContext &, const TensorRef &, const int64_t *, const int64_t *, const
    TensorRef &) {
  return Status::error("cuda: slice is not implemented yet");
}

Status expand(const KernelContext &, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: expand is not implemented yet");
}

Status gather(const KernelContext &, const TensorRef &, const TensorRef &, int64_t, const TensorRef
    &) {
  return Status::error("cuda: gather is not implemented yet");
}

Status trilu(const KernelContext &, const TensorRef &, bool, int64_t, const TensorRef &) {
  return Status::error("cuda: trilu is not implemented yet");
}

Status flatten(const KernelContext &, const TensorRef *, const int64_t *, int, const TensorRef &) {
  return Status::error("cuda: flatten is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
