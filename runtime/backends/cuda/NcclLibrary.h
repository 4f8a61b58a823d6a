//===- NcclLibrary.h - NCCL, loaded when a multi-rank CUDA run needs it ---===//
//
// Like cuBLAS (CublasLibrary.h), NCCL is opened at run time rather than
// linked: libnccl.so is large, most runs (one rank, or the CPU) never use
// it, and a machine without it must still run fsdp-run. The first NCCL
// channel opens libnccl.so.<major> of the headers the backend was built
// with (the toolkit's lib directory is not on the default search path, so
// the directory CMake found NCCL in is tried after the loader's own path),
// checks that the library is at least the release of those headers, and
// binds every entry point the channel uses. A missing library, an older
// one or a missing symbol is an error naming it, on the ranks that need
// NCCL and only then.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_NCCLLIBRARY_H
#define FSDP_RUNTIME_BACKENDS_CUDA_NCCLLIBRARY_H

#include "runtime/support/Status.h"

#include <nccl.h>

#include <string>

namespace fsdp::rt::cuda {

/// The NCCL entry points the backend uses.
struct NcclLibrary {
  decltype(&ncclGetVersion) getVersion;
  decltype(&ncclGetUniqueId) getUniqueId;
  decltype(&ncclCommInitRank) commInitRank;
  decltype(&ncclCommInitRankConfig) commInitRankConfig;
  decltype(&ncclCommSplit) commSplit;
  decltype(&ncclCommAbort) commAbort;
  decltype(&ncclCommDestroy) commDestroy;
  decltype(&ncclCommFinalize) commFinalize;
  decltype(&ncclCommGetAsyncError) commGetAsyncError;
  decltype(&ncclCommUserRank) commUserRank;
  decltype(&ncclCommCount) commCount;
  decltype(&ncclGetErrorString) getErrorString;
  decltype(&ncclGetLastError) getLastError;
  decltype(&ncclGroupStart) groupStart;
  decltype(&ncclGroupEnd) groupEnd;
  decltype(&ncclAllGather) allGather;
  decltype(&ncclReduceScatter) reduceScatter;
  decltype(&ncclAllReduce) allReduce;
  decltype(&ncclBroadcast) broadcast;
  /// The library's NCCL_VERSION_CODE (22809 for 2.28.9) and the name
  /// dlopen found it by.
  int version = 0;
  std::string path;
};

/// Opens NCCL once per process (thread-safe); later calls return the same
/// table or the same error.
Status loadNccl(const NcclLibrary *&out);

/// "nccl: WHAT: <ncclGetErrorString> (<ncclGetLastError>)" for a failed
/// call (`comm` may be null: no last error is asked of it).
std::string ncclFailure(const NcclLibrary &nccl, ncclResult_t result, const std::string &what,
                        ncclComm_t comm);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_NCCLLIBRARY_H
