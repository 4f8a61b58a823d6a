//===- OneDnnMatmul.h - bf16/f16 matrix products through oneDNN -----------===//
//
// out = alpha * op(a) @ op(b) + beta * out (ProductShape's contract) for
// bf16 and f16 operands and result, by oneDNN's matmul primitive: f32
// accumulation, alpha as its output scale and beta as a sum post-op, so
// alpha * acc + beta * out is formed in f32 and rounded once to the
// result type (round to nearest even). The transposes are strides of the
// memory descriptors, never copies. f32 runs the same way (for the GEMM
// bench, bench/cpu_gemm.py; the kernels' f32 stays OpenBLAS's, which it
// measured no slower).
//
// A primitive is created once per (shape, dtype, transposes, alpha, beta,
// thread count) and cached process-wide behind a mutex: creating one JITs
// code and takes milliseconds, executing one is thread-safe, and the
// executor's rank threads call concurrently. The scratchpad oneDNN needs
// is the calling thread's, grown to the largest product it has run (no
// per-call allocation of it); the small handles oneDNN makes per execute
// are its own bookkeeping.
//
// Threads: Debian's oneDNN runs on OpenMP. Each call sets the calling
// thread's OpenMP team to the rank's kernel threads (rankKernelThreads(),
// OPENBLAS_NUM_THREADS per rank), so a product has the same team, hence
// the same blocking and the same bits, whichever rank thread runs it, and
// the same bits run to run. In-process ranks each get their own team
// (OpenMP gives every calling thread its own).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_ONEDNNMATMUL_H
#define FSDP_RUNTIME_BACKENDS_CPU_ONEDNNMATMUL_H

#include "runtime/backends/cpu/GemmLibrary.h"
#include "runtime/support/DType.h"

#include <string>

namespace fsdp::rt::cpu {

/// Runs the product if oneDNN has a primitive for it (bf16, f16 or f32, a JIT
/// implementation, not oneDNN's reference loop) and returns true; false,
/// having done nothing, when oneDNN refuses it (the caller falls back).
/// k must be positive.
bool oneDnnProduct(const ProductShape &s, DType dtype, const void *a, const void *b, void *out,
                   float alpha, float beta);

/// Whether oneDNN runs `dtype` products on this CPU (asked once, with a
/// small product).
bool oneDnnTakes(DType dtype);

/// oneDNN's effective ISA on this CPU (dnnl_get_effective_cpu_isa), e.g.
/// "avx512_core_bf16"; ONEDNN_MAX_CPU_ISA may lower it.
const char *oneDnnIsa();

/// oneDNN's implementation for this product, e.g. "brg:avx512_core_bf16",
/// or "" when it refuses (tests and the bench print it).
std::string oneDnnImplementation(const ProductShape &s, DType dtype);

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_ONEDNNMATMUL_H
