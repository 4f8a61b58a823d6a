//===- AttentionBlocks.h - the pieces of one attention block on the CPU ---===//
//
// What AttentionKernels.cpp does to one block of a 64-query tile and a
// 64-key tile, apart from its products (BlockKernels.h): the tile and
// padding sizes, the register blocking per wide-loop copy, a block's
// accumulation weights with the pairs they keep, the element passes over a
// key row of the key-major score tile (scores, the forward's maxima and
// probabilities, the backward's terms), each in the per-element order the
// CUDA twin runs, and the packing of operand rows widened to the compute
// type. Every loop here is written to vectorize across the tile's 64
// queries: restrict-qualified rows, 32-bit flags, no calls.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ATTENTIONBLOCKS_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ATTENTIONBLOCKS_H

#include "runtime/backends/AttentionShape.h"
#include "runtime/backends/cpu/kernels/BlockKernels.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"

#include <algorithm>
#include <cstdint>
#include <type_traits>
#include <vector>

namespace fsdp::rt::cpu::attentionblock {

/// Rows of a tile: the forward's key tile (part of the bits) and the query
/// tile of a block (a size for speed only).
constexpr int64_t kTile = kAttentionKeyTile;

/// A pair's flag (kept or not), 32 bits wide so that its stores alias no
/// float (a byte's would stop the element loops from vectorizing).
using Flag = uint32_t;

/// Rows of a register block (BlockKernels.h); keepsAll and
/// accumulatePrefixes read a block's four rows by hand.
constexpr int kBlockRows = blocks::kRows;
static_assert(kBlockRows == 4, "a block's flags and counts are read four at a time");

inline int64_t roundUp(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

/// Tiles of kTile covering `len` rows.
inline int64_t tilesOf(int64_t len) { return (len + kTile - 1) / kTile; }

/// Register blocking of the copy whose vectors are Bytes wide, for compute
/// type C: packed rows are padded to kUnit elements (64 bytes), and a block
/// spans up to kUnits of them (four AVX-512 registers a row; one unit, two
/// AVX2 registers, where there are 16 registers for 4 rows).
template <typename C, int Bytes> struct Blocking {
  static constexpr int kUnit = 64 / static_cast<int>(sizeof(C));
  static constexpr int kUnits = Bytes == 64 ? 4 : 1;

  /// f(c0, std::integral_constant<int, W>) for column chunks [c0, c0 + W)
  /// covering [0, width), width a multiple of kUnit.
  template <typename F> static FSDP_HD_INLINE void chunks(int64_t width, F f) {
    constexpr int kMax = kUnits * kUnit;
    int64_t c0 = 0;
    for (; c0 + kMax <= width; c0 += kMax)
      f(c0, std::integral_constant<int, kMax>{});
    if constexpr (kUnits == 4) {
      switch ((width - c0) / kUnit) {
      case 3: return f(c0, std::integral_constant<int, 3 * kUnit>{});
      case 2: return f(c0, std::integral_constant<int, 2 * kUnit>{});
      case 1: return f(c0, std::integral_constant<int, kUnit>{});
      default: return;
      }
    }
  }
};

/// A weight matrix read through strides: weight (r, c) of a block is
/// w[r · rowStride + c · colStride], its kept flag kept[the same].
template <typename C> struct Weights {
  const C *w;
  const Flag *kept;
  int64_t rowStride, colStride;
  /// Every pair of the block's real rows and columns is kept: no flag need
  /// be read (the padding rows' weights are 0 and their sums unused).
  bool everyKept;

  FSDP_HD_INLINE Weights at(int64_t r0) const {
    return {w + r0 * rowStride, kept ? kept + r0 * rowStride : nullptr, rowStride, colStride,
            everyKept};
  }
  FSDP_HD_INLINE bool keeps(int r, int64_t c) const {
    return kept[r * rowStride + c * colStride] != 0;
  }
  FSDP_HD_INLINE bool keepsAll(int64_t c) const {
    const Flag *k = kept + c * colStride;
    return (k[0] & k[rowStride] & k[2 * rowStride] & k[3 * rowStride]) != 0;
  }
  FSDP_HD_INLINE C operator()(int r, int64_t c) const { return w[r * rowStride + c * colStride]; }
};

/// out[u] += x · row[u] for u < width: one row's term of one column.
template <typename C>
FSDP_HD_INLINE void accumulateOne(C *out, int64_t width, C x, const C *row) {
  for (int64_t u = 0; u < width; ++u)
    out[u] = multiplyAdd(x, row[u], out[u]);
}

/// acc[r·lda + x] += wt(r, c) · b[c·ldb + x] for c = c0 .. c1-1 in order,
/// every row, x < width: blocks::run over the row's column chunks.
template <int Bytes, typename C>
FSDP_HD_INLINE void runColumns(C *acc, int64_t lda, int64_t width, const Weights<C> &wt,
                               const C *b, int64_t ldb, int64_t c0, int64_t c1) {
  Blocking<C, Bytes>::chunks(width, [&](int64_t x0, auto w) __attribute__((always_inline)) {
    blocks::run<Bytes, decltype(w)::value>(acc + x0, lda, wt.w, wt.rowStride, wt.colStride,
                                            b + x0, ldb, c0, c1);
  });
}

/// acc[r·lda + x] += wt(r, c) · b[c·ldb + x] for c = c0 .. c1-1 in order
/// where wt keeps (r, c), x < width: runs of columns every row keeps go
/// through runColumns, a column some row skips row by row.
template <int Bytes, typename C>
FSDP_HD_INLINE void accumulateBlock(C *acc, int64_t lda, int64_t width, const Weights<C> &wt,
                                    const C *b, int64_t ldb, int64_t c0, int64_t c1) {
  for (int64_t c = c0; c < c1;) {
    int64_t e = c;
    while (e < c1 && (wt.everyKept || wt.keepsAll(e)))
      ++e;
    if (e > c)
      runColumns<Bytes>(acc, lda, width, wt, b, ldb, c, e);
    if (e == c1)
      return;
    for (int r = 0; r < kBlockRows; ++r)
      if (wt.keeps(r, e))
        accumulateOne(acc + r * lda, width, wt(r, e), b + e * ldb);
    c = e + 1;
  }
}

/// acc[r·lda + x] += wt(r, c) · b[c·ldb + x] for c < count[r] in order,
/// x < width (= lda): the columns every row of the block takes through
/// runColumns, the rest row by row. Rows past the tile's have count 0.
template <int Bytes, typename C>
FSDP_HD_INLINE void accumulatePrefixes(C *acc, int64_t lda, const Weights<C> &wt,
                                       const int64_t *count, const C *b, int64_t ldb) {
  const int64_t common = std::min({count[0], count[1], count[2], count[3]});
  const int64_t most = std::max({count[0], count[1], count[2], count[3]});
  if (common > 0)
    runColumns<Bytes>(acc, lda, lda, wt, b, ldb, 0, common);
  for (int64_t c = common; c < most; ++c)
    for (int r = 0; r < kBlockRows; ++r)
      if (c < count[r])
        accumulateOne(acc + r * lda, lda, wt(r, c), b + c * ldb);
}

/// The first query of the 64-row group at i0 that sees key j: kTile when
/// none does, or when j is a padding row (not `real`). Query ii sees it
/// iff ii < the group's rows and j < keyEnd(i0 + ii).
inline int64_t firstSeeing(const AttentionShape &n, int64_t j, bool real, int64_t i0) {
  return real ? std::min<int64_t>(kTile, std::max<int64_t>(0, n.firstQuery(j) - i0)) : kTile;
}

/// Key row j's scores of a block, in place: scaled and masked for the
/// queries ii in [first, rows) (those that see the key), -inf for the
/// rest. The mask's element of query ii is at offset + ii · step. With
/// Maxima, also the forward's running tile maxima tm of the queries that
/// see the key.
template <typename T, bool Maxima, typename C>
FSDP_HD_INLINE void scoreRow(C *__restrict s, C *__restrict tm, int64_t first, int64_t rows,
                             C scale, const AttentionMask &mask, int64_t offset, int64_t step) {
  if (!mask.data) {
    const AttentionMask none;
    for (int64_t ii = 0; ii < kTile; ++ii) {
      const bool sees = ii >= first && ii < rows;
      const C x = maskedScore<T>(s[ii], scale, none, 0);
      s[ii] = sees ? x : negativeInfinity<C>();
      if constexpr (Maxima)
        tm[ii] = sees ? maxOf(tm[ii], x) : tm[ii];
    }
    return;
  }
  for (int64_t ii = 0; ii < kTile; ++ii) {
    const bool sees = ii >= first && ii < rows;
    const C x = sees ? maskedScore<T>(s[ii], scale, mask, offset + ii * step) : negativeInfinity<C>();
    s[ii] = x;
    if constexpr (Maxima)
      tm[ii] = sees ? maxOf(tm[ii], x) : tm[ii];
  }
}

/// The forward's probabilities of one key row: p = exp(s - mNew) for the
/// active queries (an unseen key's score is -inf: p = +0, which leaves the
/// sum as it is), added to the row sums, rounded to T into pr.
template <typename T, typename C>
FSDP_HD_INLINE void probabilityRow(const C *__restrict s, const C *__restrict mNew,
                                   const Flag *__restrict active, C *__restrict sum,
                                   C *__restrict pr) {
  for (int64_t ii = 0; ii < kTile; ++ii) {
    const C p = active[ii] ? expOf(s[ii] - mNew[ii]) : C(0);
    sum[ii] += p;
    pr[ii] = roundedProbability<T>(p);
  }
}

/// The backward's terms of one key row without dropout: from the masked
/// scores s and dp = dot(dout_i, v_j), the recomputed probability p, the
/// rounded one dv multiplies (into pr), ds = p · (dp - delta) (into dp),
/// and whether the pair counts (p != 0).
/// Returns whether every query ii < rows keeps the pair.
template <typename T, typename C>
FSDP_HD_INLINE bool gradRow(const C *__restrict s, C *__restrict dp, C *__restrict pr,
                            Flag *__restrict kept, const C *__restrict lse,
                            const C *__restrict delta, int64_t rows) {
  Flag dropped = 0;
  for (int64_t ii = 0; ii < kTile; ++ii) {
    const C p = recomputedProbability(s[ii], lse[ii]);
    const Flag keep = p != 0;
    pr[ii] = roundedProbability<T>(p);
    dp[ii] = p * (dp[ii] - delta[ii]);
    kept[ii] = keep;
    dropped |= ii < rows ? keep ^ 1 : 0;
  }
  return dropped == 0;
}

/// Rows [first, first + count) of a [*, width] tensor widened to C into
/// dst[r · ld + x], ld >= width, zero in the padding columns and in rows
/// [count, rows).
template <typename T, typename C>
void packRows(const T *src, int64_t first, int64_t count, int64_t width, int64_t ld,
              int64_t rows, C *dst) {
  for (int64_t r = 0; r < count; ++r) {
    const T *s = src + (first + r) * width;
    C *d = dst + r * ld;
    for (int64_t x = 0; x < width; ++x)
      d[x] = load(s + x);
    std::fill(d + width, d + ld, C(0));
  }
  std::fill(dst + count * ld, dst + rows * ld, C(0));
}

/// The same rows transposed: dst[x · kTile + r] for x < width, r < kTile,
/// zero for r >= count.
template <typename T, typename C>
void packColumns(const T *src, int64_t first, int64_t count, int64_t width, C *dst) {
  for (int64_t x = 0; x < width; ++x) {
    C *d = dst + x * kTile;
    for (int64_t r = 0; r < count; ++r)
      d[r] = load(src + (first + r) * width + x);
    std::fill(d + count, d + kTile, C(0));
  }
}

/// Whether the backward runs as one pass over (b, g) tasks instead of a
/// pass over key tiles and one over query tiles. Both give the same bits
/// (the single pass adds dq's terms in the query pass's order); the single
/// pass computes each pair's two dot products once instead of twice but
/// has only B · Hkv tasks, so it is taken when those keep the rank's
/// threads evenly busy.
inline bool singlePass(int64_t groups) {
  const KernelThreads *pool = KernelThreads::current();
  const int64_t threads = pool ? pool->size() : 1;
  return groups % threads == 0 || groups >= 4 * threads;
}

/// delta_i = dot(dout_i, out_i) of every query row, in feature order.
template <typename T>
Status rowDeltas(const AttentionShape &n, const T *dout, const T *out,
                 std::vector<ComputeType<T>> &delta) {
  using C = ComputeType<T>;
  delta.assign(static_cast<size_t>(n.batch * n.heads * n.tq), C(0));
  return parallelFor(0, n.batch * n.heads * n.tq, rowGrain(n.dv), [&](int64_t begin, int64_t end) {
    runWideFma([&] {
      for (int64_t r = begin; r < end; ++r) {
        C acc = 0;
        for (int64_t x = 0; x < n.dv; ++x)
          acc = multiplyAdd(load(dout + r * n.dv + x), load(out + r * n.dv + x), acc);
        delta[r] = acc;
      }
    });
  });
}

} // namespace fsdp::rt::cpu::attentionblock

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ATTENTIONBLOCKS_H
