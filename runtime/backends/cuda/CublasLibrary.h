//===- CublasLibrary.h - cuBLAS, loaded when a GPU device first needs it --===//
//
// Linking cuBLAS into the tools costs every run about a second of start-up
// and 200 MB of memory (the library's relocations and initializers), CPU
// runs included. So the CUDA backend links only the CUDA runtime, and
// opens cuBLAS (libcublas.so.<major> of the toolkit it was built with) the
// first time a CUDA device is created; kernels call it through this table.
// A missing or older library is an error naming it, not a crash.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUBLASLIBRARY_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUBLASLIBRARY_H

#include "runtime/support/Status.h"

#include <cublas_v2.h>

namespace fsdp::rt::cuda {

/// The cuBLAS entry points the backend uses.
struct CublasLibrary {
  decltype(&cublasCreate_v2) create;
  decltype(&cublasDestroy_v2) destroy;
  decltype(&cublasSetStream_v2) setStream;
  decltype(&cublasSetWorkspace_v2) setWorkspace;
  /// The C entry point (cublas_api.h also declares C++ overloads by the
  /// same name, so the type is spelled out).
  cublasStatus_t (*gemmStridedBatchedEx)(cublasHandle_t, cublasOperation_t, cublasOperation_t,
                                         int m, int n, int k, const void *alpha, const void *a,
                                         cudaDataType aType, int lda, long long strideA,
                                         const void *b, cudaDataType bType, int ldb,
                                         long long strideB, const void *beta, void *c,
                                         cudaDataType cType, int ldc, long long strideC,
                                         int batchCount, cublasComputeType_t computeType,
                                         cublasGemmAlgo_t algo);
  decltype(&cublasGetStatusString) statusString;
};

/// Opens cuBLAS once per process (thread-safe); later calls return the same
/// table or the same error.
Status loadCublas(const CublasLibrary *&out);

/// The loaded table; only valid after loadCublas succeeded (a CUDA device
/// exists, so its kernels may run).
const CublasLibrary &cublas();

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUBLASLIBRARY_H
