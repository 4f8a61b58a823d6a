//===- NcclLibrary.cpp - NCCL, loaded when a multi-rank CUDA run needs it -===//
//
// dlopen of the soname the headers name, first by the loader's own search
// (LD_LIBRARY_PATH, the executable's run path, the system's directories),
// then in the directory CMake found NCCL in (FSDP_NCCL_LIBRARY_DIR), then
// dlsym of each entry point; done once, under a function-local static.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/NcclLibrary.h"

#include "runtime/backends/cuda/DynamicLibrary.h"

#include <string>

#define FSDP_STRINGIFY_(x) #x
#define FSDP_STRINGIFY(x) FSDP_STRINGIFY_(x)

namespace fsdp::rt::cuda {
namespace {

struct Loaded {
  NcclLibrary table{};
  Status status;
};

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
  void *library = openLibrary(soname, why);
#if defined(FSDP_NCCL_LIBRARY_DIR)
  if (!library) {
    const std::string inToolkit = std::string(FSDP_NCCL_LIBRARY_DIR) + "/" + soname;
    tried += ", " + inToolkit;
    library = openLibrary(inToolkit, why);
    loaded.table.path = inToolkit;
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
  bindSymbol(library, "ncclGetVersion", t.getVersion, missing);
  bindSymbol(library, "ncclGetUniqueId", t.getUniqueId, missing);
  bindSymbol(library, "ncclCommInitRank", t.commInitRank, missing);
  bindSymbol(library, "ncclCommInitRankConfig", t.commInitRankConfig, missing);
  bindSymbol(library, "ncclCommSplit", t.commSplit, missing);
  bindSymbol(library, "ncclCommAbort", t.commAbort, missing);
  bindSymbol(library, "ncclCommDestroy", t.commDestroy, missing);
  bindSymbol(library, "ncclCommFinalize", t.commFinalize, missing);
  bindSymbol(library, "ncclCommGetAsyncError", t.commGetAsyncError, missing);
  bindSymbol(library, "ncclCommUserRank", t.commUserRank, missing);
  bindSymbol(library, "ncclCommCount", t.commCount, missing);
  bindSymbol(library, "ncclGetErrorString", t.getErrorString, missing);
  bindSymbol(library, "ncclGetLastError", t.getLastError, missing);
  bindSymbol(library, "ncclGroupStart", t.groupStart, missing);
  bindSymbol(library, "ncclGroupEnd", t.groupEnd, missing);
  bindSymbol(library, "ncclAllGather", t.allGather, missing);
  bindSymbol(library, "ncclReduceScatter", t.reduceScatter, missing);
  bindSymbol(library, "ncclAllReduce", t.allReduce, missing);
  bindSymbol(library, "ncclBroadcast", t.broadcast, missing);
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
