//===- CudaDriverLibrary.h - the CUDA driver API, opened when first needed ===//
//
// The CUDA runtime (linked) cannot load a PTX module handed to it at run
// time; the driver API can (cuModuleLoadDataEx compiles it for the GPU).
// The backend needs that only for the PTX a compiled step carries for its
// Fused chains (GeneratedPtx.h), so, like cuBLAS and NCCL, the driver
// library is opened at run time rather than linked: libcuda.so.1, which the
// NVIDIA driver installs (the toolkit has only a stub). A machine without
// it is an error naming the library, raised only where a CUDA device is
// asked to load generated PTX - and there the runtime API, which needs the
// driver too, has already found it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDADRIVERLIBRARY_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDADRIVERLIBRARY_H

#include "runtime/support/Status.h"

#include <cuda.h>

#include <string>

namespace fsdp::rt::cuda {

/// The driver entry points the backend uses.
struct CudaDriverLibrary {
  decltype(&cuInit) init;
  decltype(&cuDeviceGet) deviceGet;
  decltype(&cuCtxGetCurrent) ctxGetCurrent;
  decltype(&cuCtxGetDevice) ctxGetDevice;
  decltype(&cuModuleLoadDataEx) moduleLoadDataEx;
  decltype(&cuModuleGetFunction) moduleGetFunction;
  decltype(&cuModuleUnload) moduleUnload;
  decltype(&cuLaunchKernel) launchKernel;
  decltype(&cuGetErrorName) getErrorName;
  decltype(&cuGetErrorString) getErrorString;
  /// The name dlopen found it by.
  std::string path;
};

/// The driver's soname: what loadCudaDriver opens.
inline constexpr const char *kCudaDriverSoname = "libcuda.so.1";

/// Opens the driver once per process (thread-safe); later calls return the
/// same table or the same error.
Status loadCudaDriver(const CudaDriverLibrary *&out);

/// Opens the library at `path` and binds every entry point, uncached (what
/// loadCudaDriver does with kCudaDriverSoname; the tests bind the
/// toolkit's stub this way). Nothing is called.
Status openCudaDriver(const std::string &path, CudaDriverLibrary &out);

/// "cuda driver: WHAT: CUDA_ERROR_NAME (the driver's text)" for a failed
/// call.
std::string driverFailure(const CudaDriverLibrary &driver, CUresult result,
                          const std::string &what);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDADRIVERLIBRARY_H
