//===- GemmLibrary.h - which library runs a CPU matrix product ------------===//
//
// The CPU kernels' matrix products (kernels/LinearAlgebraKernels.cpp) all
// reduce to one row-major product, ProductShape's contract, and each
// element type has a library for it: OpenBLAS for f32 and f64, oneDNN's
// matmul for bf16 and f16 where this CPU and oneDNN take the type
// (OneDnnMatmul.h), else the operands widened to f32 and OpenBLAS's sgemm,
// and a naive loop for integers. The 16-bit routes all accumulate in f32
// and round once to the result type, as torch's CPU matmul does; they
// differ from each other in summation order only (within the numerics
// contract, not bitwise). FSDP_CPU_GEMM chooses another 16-bit route for
// testing and comparison: `widen` (f32 operands through OpenBLAS) or
// `naive` (the reference loop); unset or `onednn` is the default. The
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

/// How bf16 and f16 products run (FSDP_CPU_GEMM).
enum class HalfGemmRoute {
  OneDnn, ///< oneDNN where it takes the type, else Widen (the default)
  Widen,  ///< operands widened to f32, OpenBLAS's sgemm, one rounding
  Naive,  ///< the naive loop (float accumulator, k in increasing order)
};

/// The route FSDP_CPU_GEMM asks for; an error naming the variable and its
/// value when it is none of onednn, widen, naive.
Status halfGemmRoute(HalfGemmRoute &route);

/// The library per dtype, 16-bit attention's route, oneDNN's ISA on this
/// machine and the variable that changes the 16-bit route, then the wide
/// loops' copy (kernels/Dispatch.h), in four lines of at most 80 columns for
/// fsdp-run --help, e.g. "CPU GEMMs: f32/f64 OpenBLAS, bf16 oneDNN, f16
/// OpenBLAS (widened);\noneDNN's ISA avx512_core_bf16 (...);\nkernels' wide
/// loops: AVX-512 (...)".
std::string gemmLibraries();

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_GEMMLIBRARY_H
