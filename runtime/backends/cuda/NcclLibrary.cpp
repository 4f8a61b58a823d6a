//===- NcclLibrary.cpp - NCCL, loaded when a multi-rank CUDA run needs it -===//
//
// dlopen of the soname the headers name, first by the loader's own search
// (LD_LIBRARY_PATH, the executable's run path, the system's directories),
// then in the directory CMake found NCCL in (FSDP_NCCL_LIBRARY_DIR), then
// dlsym of each entry point; done once, under a function-local static.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/NcclLibrary.h"

#include <dlfcn.h>

#include <string>

#define FSDP_STRINGIFY_(x) #x
#define FSDP_STRINGIFY(x) FSDP_STRINGIFY_(x)

namespace fsdp::rt::cuda {
namespace {

struct Loaded {
  NcclLibrary table{};
  Status status;
};

template <typename Fn> void bind(void *library, const char *name, Fn &slot, std::string &missing) {
  slot = reinterpret_cast<Fn>(dlsym(library, name));
  if (!slot && missing.empty())
    missing = name;
}

/// "2.28.9" for a NCCL_VERSION_CODE.
std::string versionText(int code) {
  return code >= 10000 ? cat(code / 10000, ".", code / 100 % 100, ".", code % 100)
                       : cat(code / 1000, ".", code / 100 % 10, ".", code % 100);
}

Loaded load() {
  Loaded loaded;
  const std::string soname = "libnccl.so." FSDP_STRINGIFY(NCCL_MAJOR);
  std::string tried = soname, why;
  loaded.table.path = soname;
  void *library = dlopen(soname.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (const char *e = library ? nullptr : dlerror())
    why = e;
#if defined(FSDP_NCCL_LIBRARY_DIR)
  if (!library) {
    const std::string inToolkit = std::string(FSDP_NCCL_LIBRARY_DIR) + "/" + soname;
    tried += ", " + inToolkit;
    library = dlopen(inToolkit.c_str(), RTLD_NOW | RTLD_LOCAL);
    loaded.table.path = inToolkit;
    if (const char *e = library ? nullptr : dlerror())
      why = e;
  }
#endif
  if (!library) {
    loaded.status = Status::error(
        cat("nccl: cannot load NCCL (tried ", tried, "): ", why.empty() ? "unknown error" : why,
            "; multi-rank runs on --device=cuda need NCCL ", NCCL_MAJOR, ".", NCCL_MINOR,
            " or newer (set LD_LIBRARY_PATH to its lib directory)"));
    return loaded;
  }
  std::string missing;
  NcclLibrary &t = loaded.table;
  bind(library, "ncclGetVersion", t.getVersion, missing);
  bind(library, "ncclGetUniqueId", t.getUniqueId, missing);
  bind(library, "ncclCommInitRank", t.commInitRank, missing);
  bind(library, "ncclCommInitRankConfig", t.commInitRankConfig, missing);
  bind(library, "ncclCommSplit", t.commSplit, missing);
  bind(library, "ncclCommAbort", t.commAbort, missing);
  bind(library, "ncclCommDestroy", t.commDestroy, missing);
  bind(library, "ncclCommFinalize", t.commFinalize, missing);
  bind(library, "ncclCommGetAsyncError", t.commGetAsyncError, missing);
  bind(library, "ncclCommUserRank", t.commUserRank, missing);
  bind(library, "ncclCommCount", t.commCount, missing);
  bind(library, "ncclGetErrorString", t.getErrorString, missing);
  bind(library, "ncclGetLastError", t.getLastError, missing);
  bind(library, "ncclGroupStart", t.groupStart, missing);
  bind(library, "ncclGroupEnd", t.groupEnd, missing);
  bind(library, "ncclAllGather", t.allGather, missing);
  bind(library, "ncclReduceScatter", t.reduceScatter, missing);
  bind(library, "ncclAllReduce", t.allReduce, missing);
  bind(library, "ncclBroadcast", t.broadcast, missing);
  if (!missing.empty()) {
    loaded.status = Status::error(cat("nccl: ", soname, " has no ", missing, " (an older NCCL?)"));
    return loaded;
  }
  if (ncclResult_t r = t.getVersion(&t.version); r != ncclSuccess) {
    loaded.status = Status::error(ncclFailure(t, r, "ncclGetVersion", nullptr));
    return loaded;
  }
  // The headers' structs (ncclConfig_t, versioned) and enums must mean the
  // same to the library: a newer one, or another patch of the same
  // release, not an older release.
  if (t.version < NCCL_VERSION(NCCL_MAJOR, NCCL_MINOR, 0)) {
    loaded.status = Status::error(cat("nccl: ", soname, " is NCCL ", versionText(t.version),
                                      ", older than the ", NCCL_MAJOR, ".", NCCL_MINOR,
                                      " this build was compiled against"));
    return loaded;
  }
  return loaded;
}

const Loaded &loadedOnce() {
  static const Loaded loaded = load();
  return loaded;
}

} // namespace

Status loadNccl(const NcclLibrary *&out) {
  const Loaded &loaded = loadedOnce();
  out = loaded.status ? &loaded.table : nullptr;
  return loaded.status;
}

std::string ncclFailure(const NcclLibrary &nccl, ncclResult_t result, const std::string &what,
                        ncclComm_t comm) {
  const char *text = nccl.getErrorString ? nccl.getErrorString(result) : "unknown error";
  const char *last = nccl.getLastError ? nccl.getLastError(comm) : nullptr;
  std::string message = cat("nccl: ", what, ": ", text ? text : "unknown error");
  if (last && *last)
    message += cat(" (", last, ")");
  return message;
}

} // namespace fsdp::rt::cuda
