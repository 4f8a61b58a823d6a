//===- CublasLibrary.cpp - cuBLAS, loaded when a GPU device first needs it ===//
//
// dlopen of the soname the headers name (so the library matches the API the
// backend was compiled against), then dlsym of each entry point by its
// exported (_v2) name. Done once, under a function-local static.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CublasLibrary.h"

#include <dlfcn.h>

#include <string>

#define FSDP_STRINGIFY_(x) #x
#define FSDP_STRINGIFY(x) FSDP_STRINGIFY_(x)

namespace fsdp::rt::cuda {
namespace {

struct Loaded {
  CublasLibrary table{};
  Status status;
};

template <typename Fn> bool bind(void *library, const char *name, Fn &slot, std::string &error) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot && error.empty())
    error = name;
  return slot != nullptr;
}

Loaded load() {
  Loaded loaded;
  const char *soname = "libcublas.so." FSDP_STRINGIFY(CUBLAS_VER_MAJOR);
  void *library = dlopen(soname, RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char *why = dlerror();
    loaded.status = Status::error(cat("cuda: cannot load cuBLAS (", soname, "): ",
                                      why ? why : "unknown error"));
    return loaded;
  }
  std::string missing;
  CublasLibrary &t = loaded.table;
  bind(library, "cublasCreate_v2", t.create, missing);
  bind(library, "cublasDestroy_v2", t.destroy, missing);
  bind(library, "cublasSetStream_v2", t.setStream, missing);
  bind(library, "cublasSetWorkspace_v2", t.setWorkspace, missing);
  bind(library, "cublasGemmStridedBatchedEx", t.gemmStridedBatchedEx, missing);
  bind(library, "cublasGetStatusString", t.statusString, missing);
  if (!missing.empty())
    loaded.status =
        Status::error(cat("cuda: ", soname, " has no ", missing, " (an older cuBLAS?)"));
  return loaded;
}

const Loaded &loadedOnce() {
  static const Loaded loaded = load();
  return loaded;
}

} // namespace

Status loadCublas(const CublasLibrary *&out) {
  const Loaded &loaded = loadedOnce();
  out = loaded.status ? &loaded.table : nullptr;
  return loaded.status;
}

const CublasLibrary &cublas() { return loadedOnce().table; }

} // namespace fsdp::rt::cuda
