//===- CudaStatus.h - a failed CUDA runtime call as a Status --------------===//
//
// How every file of the CUDA backend reports a failed CUDA runtime call:
// "cuda: <operation>: <cudaGetErrorString>", never an abort, with the
// thread's last error cleared so that the next kernel launch's check does
// not pick it up again. The device's files (CudaDeviceImpl.h) and the NCCL
// channel (NcclChannel.cpp) share it; it needs only CUDA's runtime header,
// not the device's classes.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDASTATUS_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDASTATUS_H

#include "runtime/support/Status.h"

#include <cuda_runtime_api.h>

#include <string>

namespace fsdp::rt::cuda {

/// "cuda: WHAT: CUDA's message" for a failed call. Clears the thread's last
/// error, which would otherwise surface at the next kernel launch's check.
inline Status cudaFailure(cudaError_t error, const std::string &what) {
  (void)cudaGetLastError();
  return Status::error(cat("cuda: ", what, ": ", cudaGetErrorString(error)));
}

/// Returns "cuda: <what...>: <CUDA's message>" when `call` fails.
#define FSDP_CUDA_RETURN_IF_ERROR(call, ...)                                                       \
  do {                                                                                             \
    if (cudaError_t fsdpCudaError_ = (call); fsdpCudaError_ != cudaSuccess)                        \
      return ::fsdp::rt::cuda::cudaFailure(fsdpCudaError_, ::fsdp::rt::cat(__VA_ARGS__));          \
  } while (false)

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDASTATUS_H
