//===- CblasGemm.h - a column-major GEMM description run through cblas ----===//
//
// What stands in for cuBLAS in the SIMT build, and what the mapping's tests
// execute: each call of a GemmMapping (GemmMapping.h) as cblas_sgemm or
// cblas_dgemm with CblasColMajor, one per batch entry and outer position,
// at the offsets and strides the description gives. If the description is
// wrong (a transpose flag, a leading dimension, a stride), the product is.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_SIMT_CBLASGEMM_H
#define FSDP_RUNTIME_BACKENDS_CUDA_SIMT_CBLASGEMM_H

#include "runtime/backends/cuda/GemmMapping.h"

namespace fsdp::rt::cuda {

/// `left` and `right` are the row-major product's operands (BLAS's B and
/// A); `c` its result. T is float or double.
template <typename T>
void runColumnMajorGemm(const GemmMapping &mapping, const T *left, const T *right, T *c);

} // namespace fsdp::rt::cuda

#endif // FSDP_RUNTIME_BACKENDS_CUDA_SIMT_CBLASGEMM_H
