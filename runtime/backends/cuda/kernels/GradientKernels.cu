//===- GradientKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status activationGrad(const KernelContext &, ActivationGradKind, const TensorRef &, const TensorRef
    &, const TensorRef &) {
  return Status::error("cuda: activationGrad is not implemented yet");
}

Status softmaxGrad(const KernelContext &, const TensorRef &, const TensorRef &, int64_t, bool, const
    TensorRef &) {
  return Status::error("cuda: softmaxGrad is not implemented yet");
}

Status layerNormGrad(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef &,
    const TensorRef &, const TensorRef &, int64_t, const TensorRef &, const TensorRef &, const
    TensorRef &) {
  return Status::error("cuda: layerNormGrad is not implemented yet");
}

Status gatherGrad(const KernelContext &, const TensorRef &, const TensorRef &, int64_t, const
    TensorRef &) {
  return Status::error("cuda: gatherGrad is not implemented yet");
}

Status sliceGrad(const KernelContext &, const TensorRef &, const int64_t *, const int64_t *, const
    TensorRef &) {
  return Status::error("cuda: sliceGrad is not implemented yet");
}

Status reduceMaxGrad(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef &,
    const int64_t *, int, const TensorRef &) {
  return Status::error("cuda: reduceMaxGrad is not implemented yet");
}

Status dropoutGrad(const KernelContext &, const TensorRef &, const TensorRef &, float, const
    TensorRef &) {
  return Status::error("cuda: dropoutGrad is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
