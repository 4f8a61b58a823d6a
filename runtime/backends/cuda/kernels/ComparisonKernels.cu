//===- ComparisonKernels.cu - (to be written) --------------------------------===//
//
// Placeholder: each function refuses with "not implemented yet" until
// its CUDA kernels land.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaKernels.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status compare(const KernelContext &, ComparePredicate, const TensorRef &, const TensorRef &, const
    TensorRef &) {
  return Status::error("cuda: compare is not implemented yet");
}

Status logical(const KernelContext &, LogicalKind, const TensorRef &, const TensorRef &, const
    TensorRef &) {
  return Status::error("cuda: logical is not implemented yet");
}

Status isNaN(const KernelContext &, const TensorRef &, const TensorRef &) {
  return Status::error("cuda: isNaN is not implemented yet");
}

Status isInf(const KernelContext &, const TensorRef &, bool, bool, const TensorRef &) {
  return Status::error("cuda: isInf is not implemented yet");
}

FSDP_CUDA_NAMESPACE_END
