//===- DynamicLibrary.h - opening a library and binding its entry points --===//
//
// cuBLAS, NCCL and the CUDA driver are opened at run time rather than
// linked (CublasLibrary.h, NcclLibrary.h, CudaDriverLibrary.h): the tools
// must start, and run on the CPU, on machines without them. Each loader
// fills a table of function pointers the same way - dlopen, then dlsym of
// every entry point, remembering the first one missing so the error can
// name it - and that shared part is here.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_DYNAMICLIBRARY_H
#define FSDP_RUNTIME_BACKENDS_CUDA_DYNAMICLIBRARY_H

#include <dlfcn.h>

#include <string>

namespace fsdp::rt::cuda {

/// dlopen(path) with local symbols, all resolved now; null when it cannot
/// be opened, with the loader's reason in `why`.
inline void *openLibrary(const std::string &path, std::string &why) {
  void *library = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *e = dlerror();
    why = e ? e : "unknown error";
  }
  return library;
}

/// Binds `slot` to the library's `name`; when it is absent, the slot is
/// null and `missing` names it (the first one missing only).
template <typename Fn>
void bindSymbol(void *library, const char *name, Fn &slot, std::string &missing) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot && missing.empty())
    missing = name;
}

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_DYNAMICLIBRARY_H
