//===- OneDnnMatmul.h - f32/bf16/f16 matrix products through oneDNN -------===//
//
// out = alpha * op(a) @ op(b) + beta * out (ProductShape's contract) for
// bf16 and f16 operands and result (and, for attention's blocks, strided
// 16-bit products into an f32 result), by oneDNN's matmul primitive: f32
// accumulation, alpha as its output scale and beta as a sum post-op, so
// alpha * acc + beta * out is formed in f32 and rounded once to the
// result type (round to nearest even). The transposes are strides of the
// memory descriptors, never copies. f32 runs the same way (the kernels'
// f32 products by default: GemmLibrary.h says why).
//
// A primitive is created once per (rows, shape, dtype, transposes, alpha,
// beta) and cached process-wide behind a mutex: creating one JITs code
// and takes about a millisecond, executing one is thread-safe, and the
// executor's rank threads call concurrently. The scratchpad oneDNN needs
// is the running thread's, grown to the largest piece it has run (no
// per-call allocation of it); the small handles oneDNN makes per execute
// are its own bookkeeping.
//
// Threads: Debian's oneDNN runs on OpenMP, whose teams spin after each
// product and, on a loaded machine, wait out time slices at every barrier
// (at two threads on this project's 2-core VM, products of a few
// milliseconds took 12-16 ms). So oneDNN runs single-threaded
// (omp_set_num_threads(1) on every thread that calls it) and the rank's
// own kernel pool (KernelThreads.h) splits the rows: rankKernelThreads()
// pieces of at least 64 rows, a primitive each. The pieces depend on the
// thread count alone, not on which rank thread calls or whether the pool
// is free (a busy pool runs them inline, in order), so the bits are the
// same run to run and on every rank thread; like OpenBLAS's, they may
// differ between thread counts.
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

/// A product with leading dimensions, for kernels that tile their own work
/// (attention's blocks, kernels/AttentionGemms.cpp): op(a) is m x k,
/// op(b) k x n, out m x n, each row-major with its own leading dimension
/// (a stored k x lda when transA, likewise b).
struct StridedProduct {
  int64_t m = 0, n = 0, k = 0, lda = 0, ldb = 0, ldc = 0;
  bool transA = false, transB = false;
};

/// out = op(a) @ op(b), plus out when `accumulate`: a and b in `dtype`
/// (bf16 or f16), out f32, f32 accumulation; one primitive run whole on
/// the calling thread (its bits depend on the shape alone, not on any
/// thread count). False, having done nothing, when oneDNN refuses it.
bool oneDnnStridedProduct(const StridedProduct &s, DType dtype, const void *a, const void *b,
                          float *out, bool accumulate);

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
