//===- CudaRuntime.h - the CUDA runtime, or its emulation -----------------===//
//
// Every file of the CUDA backend that the tests also build for the host
// includes this instead of cuda_runtime.h. With FSDP_SIMT_EMULATION defined
// (the `cuda-simt` build of the same sources) it provides the emulated
// execution model of simt/Simt.h; otherwise CUDA's runtime API.
//
// Both builds can be linked into one program (fsdp-run has the `cuda` and
// the `cuda-simt` devices), so the backend's code lives in an inline
// namespace named after the build: sources write `fsdp::rt::cuda::binary`
// either way, and the two builds' symbols stay distinct.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDARUNTIME_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDARUNTIME_H

#if defined(FSDP_SIMT_EMULATION)
#include "runtime/backends/cuda/simt/Simt.h"
#define FSDP_CUDA_BUILD simt
#else
#include <cuda_runtime_api.h>
#define FSDP_CUDA_BUILD device
#endif

#define FSDP_CUDA_NAMESPACE_BEGIN                                                                  \
  namespace fsdp::rt::cuda {                                                                       \
  inline namespace FSDP_CUDA_BUILD {
#define FSDP_CUDA_NAMESPACE_END                                                                    \
  }                                                                                                \
  }

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDARUNTIME_H
