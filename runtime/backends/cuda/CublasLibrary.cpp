//===- CublasLibrary.cpp - cuBLAS, loaded when a GPU device first needs it ===//
//
// dlopen of the soname the headers name (so the library matches the API the
// backend was compiled against), then dlsym of each entry point by its
// exported (_v2) name. Done once, under a function-local static.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CublasLibrary.h"

#include "runtime/backends/cuda/DynamicLibrary.h"

#include <string>

#define FSDP_STRINGIFY_(x) #x
#define FSDP_STRINGIFY(x) FSDP_STRINGIFY_(x)

namespace fsdp::rt::cuda {
namespace {

struct Loaded {
  CublasLibrary table{};
  Status status;
};

Loaded load() {
  Loaded loaded;
  const char *soname = "libcublas.so." FSDP_STRINGIFY(CUBLAS_VER_MAJOR);
  std::string why;
  void *library = openLibrary(soname, why);
  if (!library) {
    loaded.status = Status::error(cat("cuda: cannot load cuBLAS (", soname, "): ", why));
    return loaded;
  }
  std::string missing;
  CublasLibrary &t = loaded.table;
  bindSymbol(library, "cublasCreate_v2", t.create, missing);
  bindSymbol(library, "cublasDestroy_v2", t.destroy, missing);
  bindSymbol(library, "cublasSetStream_v2", t.setStream, missing);
  bindSymbol(library, "cublasSetWorkspace_v2", t.setWorkspace, missing);
  bindSymbol(library, "cublasGemmStridedBatchedEx", t.gemmStridedBatchedEx, missing);
  bindSymbol(library, "cublasGetStatusString", t.statusString, missing);
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
