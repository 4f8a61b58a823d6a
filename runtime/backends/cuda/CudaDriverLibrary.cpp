//===- CudaDriverLibrary.cpp - the CUDA driver API, opened when first needed ===//
//
// dlopen of libcuda.so.1 by the loader's own search (the driver installs
// it on the system path), then dlsym of each entry point by the name
// cuda.h declares it under (the per-thread-stream variants are not used:
// launches name their stream); done once, under a function-local static.
// cuInit is left to the caller: binding calls nothing.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaDriverLibrary.h"

#include "runtime/backends/cuda/DynamicLibrary.h"

namespace fsdp::rt::cuda {
namespace {

struct Loaded {
  CudaDriverLibrary table{};
  Status status;
};

const Loaded &loadedOnce() {
  static const Loaded loaded = [] {
    Loaded l;
    l.status = openCudaDriver(kCudaDriverSoname, l.table);
    return l;
  }();
  return loaded;
}

} // namespace

Status openCudaDriver(const std::string &path, CudaDriverLibrary &out) {
  out = CudaDriverLibrary{};
  out.path = path;
  std::string why;
  void *library = openLibrary(path, why);
  if (!library)
    return Status::error(cat("cuda: cannot load the CUDA driver (", path, "): ", why,
                             "; running the PTX generated for Fused chains needs the NVIDIA "
                             "driver's libcuda"));
  std::string missing;
  bindSymbol(library, "cuInit", out.init, missing);
  bindSymbol(library, "cuDeviceGet", out.deviceGet, missing);
  bindSymbol(library, "cuCtxGetCurrent", out.ctxGetCurrent, missing);
  bindSymbol(library, "cuCtxGetDevice", out.ctxGetDevice, missing);
  bindSymbol(library, "cuModuleLoadDataEx", out.moduleLoadDataEx, missing);
  bindSymbol(library, "cuModuleGetFunction", out.moduleGetFunction, missing);
  bindSymbol(library, "cuModuleUnload", out.moduleUnload, missing);
  bindSymbol(library, "cuLaunchKernel", out.launchKernel, missing);
  bindSymbol(library, "cuGetErrorName", out.getErrorName, missing);
  bindSymbol(library, "cuGetErrorString", out.getErrorString, missing);
  if (!missing.empty())
    return Status::error(cat("cuda: ", path, " has no ", missing, " (not a CUDA driver?)"));
  return Status::ok();
}

Status loadCudaDriver(const CudaDriverLibrary *&out) {
  const Loaded &loaded = loadedOnce();
  out = loaded.status ? &loaded.table : nullptr;
  return loaded.status;
}

std::string driverFailure(const CudaDriverLibrary &driver, CUresult result,
                          const std::string &what) {
  const char *name = nullptr, *text = nullptr;
  if (!driver.getErrorName || driver.getErrorName(result, &name) != CUDA_SUCCESS)
    name = nullptr;
  if (!driver.getErrorString || driver.getErrorString(result, &text) != CUDA_SUCCESS)
    text = nullptr;
  std::string message = cat("cuda driver: ", what, ": ");
  if (name)
    message += name;
  else
    message += cat("error ", static_cast<int>(result));
  if (text)
    message += cat(" (", text, ")");
  return message;
}

} // namespace fsdp::rt::cuda
