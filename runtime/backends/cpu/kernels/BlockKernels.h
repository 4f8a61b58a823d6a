//===- BlockKernels.h - register-blocked small products, exact per element -===//
//
// The small GEMMs of the attention kernels (AttentionKernels.cpp): four
// rows by W columns of accumulators held in vector registers while a
// reduction index walks on, each output one sequential sum of fused
// multiply-adds (std::fma's rounding) in increasing index order, so a
// block computes exactly what the plain per-element loops compute. One
// copy per wide-loop tier (Dispatch.h's runWideFmaSized: AVX-512, AVX2+FMA,
// x86-64-v2). The AVX-512 and AVX2 copies are written with intrinsics in
// functions of their own target, called out of line (a call per block of
// many thousand operations): written as plain loops, GCC folds each vector
// of the shared operand into every multiply-add as a memory operand, five
// loads per four multiply-adds, and the loop runs at the load ports' pace
// instead of the FMA units'. The baseline copy is the plain loops.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELS_BLOCKKERNELS_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELS_BLOCKKERNELS_H

#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <cmath>
#include <cstdint>

#if defined(__GNUC__) && defined(__x86_64__)
#include <immintrin.h>
#endif

namespace fsdp::rt::cpu::blocks {

/// Rows of a register block.
constexpr int kRows = 4;

#if defined(__GNUC__) && defined(__x86_64__)
#define FSDP_AVX2_TARGET "avx2,fma"
#define FSDP_LANES_AVX512 __attribute__((always_inline, target(FSDP_AVX512_TARGET))) static inline
#define FSDP_LANES_AVX2 __attribute__((always_inline, target(FSDP_AVX2_TARGET))) static inline

/// A vector register of C of one tier: load, store, broadcast, zero and
/// the fused multiply-add a · b + c rounded once; one specialization per
/// (type, width), from the intrinsics named PREFIX_op_SUFFIX.
template <typename C, int Bytes> struct Lanes;
#define FSDP_LANES(TYPE, BYTES, VECTOR, PREFIX, SUFFIX, FN)                                     \
  template <> struct Lanes<TYPE, BYTES> {                                                      \
    using V = VECTOR;                                                                          \
    static constexpr int kCount = BYTES / static_cast<int>(sizeof(TYPE));                     \
    FN V zero() { return PREFIX##_setzero_##SUFFIX(); }                                        \
    FN V load(const TYPE *p) { return PREFIX##_loadu_##SUFFIX(p); }                            \
    FN V broadcast(TYPE x) { return PREFIX##_set1_##SUFFIX(x); }                               \
    FN V fma(V a, V b, V c) { return PREFIX##_fmadd_##SUFFIX(a, b, c); }                       \
    FN void store(TYPE *p, V v) { PREFIX##_storeu_##SUFFIX(p, v); }                            \
  };
FSDP_LANES(float, 64, __m512, _mm512, ps, FSDP_LANES_AVX512)
FSDP_LANES(double, 64, __m512d, _mm512, pd, FSDP_LANES_AVX512)
FSDP_LANES(float, 32, __m256, _mm256, ps, FSDP_LANES_AVX2)
FSDP_LANES(double, 32, __m256d, _mm256, pd, FSDP_LANES_AVX2)
#undef FSDP_LANES

// The vector copies' bodies, one per target (a function's target cannot
// depend on a template argument): out = a · b from +0 (dot), and acc +=
// w · b (run); b's row vectors are loaded once per index and shared by the
// four rows.
#define FSDP_BLOCK_KERNELS(TIER, TARGET, BYTES)                                                \
  template <int W, typename C>                                                                 \
  __attribute__((target(TARGET), noinline)) void dot##TIER(                                    \
      const C *a, int64_t lda, const C *b, int64_t ldb, int64_t n, C *out, int64_t ldo) {      \
    using L = Lanes<C, BYTES>;                                                                 \
    constexpr int kV = W / L::kCount;                                                          \
    typename L::V acc[kRows][kV];                                                              \
    for (int r = 0; r < kRows; ++r)                                                            \
      for (int v = 0; v < kV; ++v)                                                             \
        acc[r][v] = L::zero();                                                                 \
    for (int64_t c = 0; c < n; ++c) {                                                          \
      typename L::V row[kV];                                                                   \
      for (int v = 0; v < kV; ++v)                                                             \
        row[v] = L::load(b + c * ldb + v * L::kCount);                                         \
      for (int r = 0; r < kRows; ++r) {                                                        \
        const typename L::V x = L::broadcast(a[r * lda + c]);                                  \
        for (int v = 0; v < kV; ++v)                                                           \
          acc[r][v] = L::fma(x, row[v], acc[r][v]);                                            \
      }                                                                                        \
    }                                                                                          \
    for (int r = 0; r < kRows; ++r)                                                            \
      for (int v = 0; v < kV; ++v)                                                             \
        L::store(out + r * ldo + v * L::kCount, acc[r][v]);                                    \
  }                                                                                            \
  template <int W, typename C>                                                                 \
  __attribute__((target(TARGET), noinline)) void run##TIER(                                    \
      C *acc, int64_t lda, const C *w, int64_t wr, int64_t wc, const C *b, int64_t ldb,        \
      int64_t c0, int64_t c1) {                                                                \
    using L = Lanes<C, BYTES>;                                                                 \
    constexpr int kV = W / L::kCount;                                                          \
    typename L::V sum[kRows][kV];                                                              \
    for (int r = 0; r < kRows; ++r)                                                            \
      for (int v = 0; v < kV; ++v)                                                             \
        sum[r][v] = L::load(acc + r * lda + v * L::kCount);                                    \
    for (int64_t c = c0; c < c1; ++c) {                                                        \
      typename L::V row[kV];                                                                   \
      for (int v = 0; v < kV; ++v)                                                             \
        row[v] = L::load(b + c * ldb + v * L::kCount);                                         \
      for (int r = 0; r < kRows; ++r) {                                                        \
        const typename L::V x = L::broadcast(w[r * wr + c * wc]);                              \
        for (int v = 0; v < kV; ++v)                                                           \
          sum[r][v] = L::fma(x, row[v], sum[r][v]);                                            \
      }                                                                                        \
    }                                                                                          \
    for (int r = 0; r < kRows; ++r)                                                            \
      for (int v = 0; v < kV; ++v)                                                             \
        L::store(acc + r * lda + v * L::kCount, sum[r][v]);                                    \
  }

FSDP_BLOCK_KERNELS(Avx512, FSDP_AVX512_TARGET, 64)
FSDP_BLOCK_KERNELS(Avx2, FSDP_AVX2_TARGET, 32)
#undef FSDP_BLOCK_KERNELS
#undef FSDP_LANES_AVX512
#undef FSDP_LANES_AVX2
#endif

/// out[r·ldo + u] = Σ_c a[r·lda + c] · b[c·ldb + u] for r < kRows, u < W,
/// c < n: each sum from +0 in increasing c, in the copy whose vectors are
/// Bytes wide.
template <int Bytes, int W, typename C>
FSDP_HD_INLINE void dot(const C *a, int64_t lda, const C *b, int64_t ldb, int64_t n, C *out,
                        int64_t ldo) {
#if defined(__GNUC__) && defined(__x86_64__)
  if constexpr (Bytes == 64)
    return dotAvx512<W>(a, lda, b, ldb, n, out, ldo);
  else if constexpr (Bytes == 32)
    return dotAvx2<W>(a, lda, b, ldb, n, out, ldo);
#endif
  C acc[kRows][W] = {};
  for (int64_t c = 0; c < n; ++c) {
    const C *row = b + c * ldb;
    for (int r = 0; r < kRows; ++r) {
      const C x = a[r * lda + c];
      for (int u = 0; u < W; ++u)
        acc[r][u] = std::fma(x, row[u], acc[r][u]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int u = 0; u < W; ++u)
      out[r * ldo + u] = acc[r][u];
}

/// acc[r·lda + u] += w[r·wr + c·wc] · b[c·ldb + u] for c = c0 .. c1-1 in
/// order, r < kRows, u < W, in the copy whose vectors are Bytes wide.
template <int Bytes, int W, typename C>
FSDP_HD_INLINE void run(C *acc, int64_t lda, const C *w, int64_t wr, int64_t wc, const C *b,
                        int64_t ldb, int64_t c0, int64_t c1) {
#if defined(__GNUC__) && defined(__x86_64__)
  if constexpr (Bytes == 64)
    return runAvx512<W>(acc, lda, w, wr, wc, b, ldb, c0, c1);
  else if constexpr (Bytes == 32)
    return runAvx2<W>(acc, lda, w, wr, wc, b, ldb, c0, c1);
#endif
  C sum[kRows][W];
  for (int r = 0; r < kRows; ++r)
    for (int u = 0; u < W; ++u)
      sum[r][u] = acc[r * lda + u];
  for (int64_t c = c0; c < c1; ++c) {
    const C *row = b + c * ldb;
    for (int r = 0; r < kRows; ++r) {
      const C x = w[r * wr + c * wc];
      for (int u = 0; u < W; ++u)
        sum[r][u] = std::fma(x, row[u], sum[r][u]);
    }
  }
  for (int r = 0; r < kRows; ++r)
    for (int u = 0; u < W; ++u)
      acc[r * lda + u] = sum[r][u];
}

} // namespace fsdp::rt::cpu::blocks

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELS_BLOCKKERNELS_H
