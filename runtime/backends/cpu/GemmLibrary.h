//===- GemmLibrary.h - which library runs a CPU matrix product ------------===//
//
// The CPU kernels' matrix products (kernels/LinearAlgebraKernels.cpp) all
// reduce to one row-major product, ProductShape's contract, and each
// element type has a library for it: oneDNN's matmul for f32, bf16 and f16
// where this CPU and oneDNN take the type (OneDnnMatmul.h), else OpenBLAS's
// sgemm (16-bit operands widened to f32); OpenBLAS for f64 and a naive loop
// for integers. Why oneDNN for f32: in the training step its products took
// half OpenBLAS's time on an AMD EPYC and 13% less on an Intel Xeon
// (docs/benchmarks.md). The routes all accumulate in f32 and round once to
// the result type, as torch's CPU matmul does; they differ from each other
// in summation order only (within the numerics contract, not bitwise).
// FSDP_CPU_GEMM chooses another route for testing and comparison: `widen`
// (OpenBLAS, 16-bit operands widened) or `naive` (f32 by OpenBLAS, 16-bit by
// the reference loop); unset or `onednn` is the default. The
// same variable routes 16-bit attention (kernels/AttentionGemms.h): oneDNN's
// block products by default, the exact kernels under `widen` or `naive`. This
// header names the route and the libraries in use, for fsdp-run --help.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_GEMMLIBRARY_H
#define FSDP_RUNTIME_BACKENDS_CPU_GEMMLIBRARY_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>

namespace fsdp::rt::cpu {

/// One matrix product: op(a) is m x k, op(b) is k x n, out is m x n; all
/// three row-major and contiguous, a stored k x m when transA (likewise b).
struct ProductShape {
  int64_t m = 0, n = 0, k = 0;
  bool transA = false, transB = false;
};

/// How f32, bf16 and f16 products run (FSDP_CPU_GEMM).
enum class GemmRoute {
  OneDnn, ///< oneDNN where it takes the type, else Widen (the default)
  Widen,  ///< OpenBLAS's sgemm; 16-bit operands widened to f32, one rounding
  Naive,  ///< f32 as Widen; 16-bit by the naive loop (float accumulator,
          ///< k in increasing order)
};

/// The route FSDP_CPU_GEMM asks for; an error naming the variable and its
/// value when it is none of onednn, widen, naive.
Status gemmRoute(GemmRoute &route);

/// The library per dtype, 16-bit attention's route, oneDNN's ISA on this
/// machine and the variable that changes the 16-bit route, then the wide
/// loops' copy (kernels/Dispatch.h), in four lines of at most 80 columns for
/// fsdp-run --help, e.g. "CPU GEMMs: f32/f64 OpenBLAS, bf16 oneDNN, f16
/// OpenBLAS (widened);\noneDNN's ISA avx512_core_bf16 (...);\nkernels' wide
/// loops: AVX-512 (...)".
std::string gemmLibraries();

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_GEMMLIBRARY_H
