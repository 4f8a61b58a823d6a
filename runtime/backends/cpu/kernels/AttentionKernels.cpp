//===- AttentionKernels.cpp - flash-style scaled dot-product attention ----===//
//
// nn.attention's kernels (Kernels.def's Attention and AttentionGrad rows):
// softmax(q kᵀ · scale + mask) v without the B·H·Tq·Tk scores. The forward
// walks each query row's keys in tiles of kAttentionKeyTile with an online
// softmax (running max and sum, the accumulated output rescaled when the
// max grows) and saves only the output and the row's log-sum-exp; the
// backward recomputes each probability from the log-sum-exp. Compute is in
// f32 (f64 for f64), 16-bit operands widened exactly; as torch's CPU flash
// kernel does, the probabilities that multiply the values are rounded to
// the operand dtype first; dropout (dropout_p) multiplies those by
// nn.dropout's keep factor, drawn again in the backward. A row whose every
// key is masked gives zeros and lse -inf, as torch >= 2.5 (its "safe"
// softmax; checked with torch 2.15: math and flash backends both give 0).
//
// Each element's arithmetic is the plain loops' (a dot product summed from
// +0 in increasing feature order, then scaled and masked; accumulations in
// increasing key, or head then query, order, a pair whose backward
// probability is 0 skipped; AttentionShape.h's formulas), which the CUDA
// twin (cuda/kernels/AttentionKernels.cu) runs one thread per row. Speed
// comes from doing many independent elements at once, never from
// reordering one. The work goes by blocks of a 64-row query tile and a
// 64-key tile: the block's scores and dout·v products are computed
// key-major (Sᵀ = K Qᵀ, dPᵀ = V dOᵀ), so that the per-query running
// maximum and sum advance along the keys for 64 queries at once, and the
// products with v, dout, q and k accumulate in register blocks of four
// rows by up to 64 columns (BlockKernels.h's dot and run: a small GEMM whose
// every output keeps its own sequential sum), the block size chosen per
// wide-loop copy (runWideFmaSized). Every sum of products is an explicit
// fused multiply-add (multiplyAdd) and the file is built with
// -ffp-contract=off, so nothing else is fused on any target and the bits
// are the CUDA build's (-fmad=false). Operands are packed widened to C,
// rows padded to 64 bytes, once per (batch, kv head) where a task walks
// a whole head, so the packing is not repeated per block.
//
// The backward runs as one task per (batch, kv head) when those keep the
// threads evenly busy: its heads in order, each walking its key tiles in
// order, so each pair's dot products are computed once for dq, dk and dv;
// otherwise one pass over key tiles for dk and dv and one over query tiles
// for dq, which recomputes the block terms. Every result element is written
// by one task in a fixed order: no atomics, and the bits depend neither on
// the thread count nor on which way ran.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include "runtime/backends/AttentionShape.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/kernels/BlockKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

/// Rows of a tile: the forward's key tile (part of the bits) and the query
/// tile of a block (a size for speed only).
constexpr int64_t kTile = kAttentionKeyTile;

/// A pair's flag (kept or not), 32 bits wide so that its stores alias no
/// float (a byte's would stop the element loops from vectorizing).
using Flag = uint32_t;

/// Rows of a register block (BlockKernels.h).
constexpr int kBlockRows = blocks::kRows;

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

/// acc[r·lda + x] += wt(r, c) · b[c·ldb + x] for c = c0 .. c1-1 in order
/// where wt keeps (r, c), x < width: runs of columns every row keeps go
/// through blocks::run, a column some row skips row by row.
template <int Bytes, typename C>
FSDP_HD_INLINE void accumulateBlock(C *acc, int64_t lda, int64_t width, const Weights<C> &wt,
                                    const C *b, int64_t ldb, int64_t c0, int64_t c1) {
  if (wt.everyKept) {
    if (c1 > c0)
      Blocking<C, Bytes>::chunks(width, [&](int64_t x0, auto w) __attribute__((always_inline)) {
        blocks::run<Bytes, decltype(w)::value>(acc + x0, lda, wt.w, wt.rowStride, wt.colStride,
                                                b + x0, ldb, c0, c1);
      });
    return;
  }
  int64_t c = c0;
  while (c < c1) {
    int64_t e = c;
    while (e < c1 && wt.keepsAll(e))
      ++e;
    if (e > c)
      Blocking<C, Bytes>::chunks(width, [&](int64_t x0, auto w) __attribute__((always_inline)) {
        blocks::run<Bytes, decltype(w)::value>(acc + x0, lda, wt.w, wt.rowStride, wt.colStride,
                                                b + x0, ldb, c, e);
      });
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
/// blocks::run, the rest row by row. Rows past the tile's have count 0.
template <int Bytes, typename C>
FSDP_HD_INLINE void accumulatePrefixes(C *acc, int64_t lda, const Weights<C> &wt,
                                       const int64_t *count, const C *b, int64_t ldb) {
  const int64_t common = std::min({count[0], count[1], count[2], count[3]});
  const int64_t most = std::max({count[0], count[1], count[2], count[3]});
  if (common > 0)
    Blocking<C, Bytes>::chunks(lda, [&](int64_t x0, auto w) __attribute__((always_inline)) {
      blocks::run<Bytes, decltype(w)::value>(acc + x0, lda, wt.w, wt.rowStride, wt.colStride,
                                                b + x0, ldb, 0, common);
    });
  for (int64_t c = common; c < most; ++c)
    for (int r = 0; r < kBlockRows; ++r)
      if (c < count[r])
        accumulateOne(acc + r * lda, lda, wt(r, c), b + c * ldb);
}

/// Key row j's scores of a block, in place: scaled and masked for the
/// queries ii in [first, rows) (those that see the key), -inf for the
/// rest; seen[ii] says which. The mask's element of query ii is at
/// offset + ii · step.
template <typename T, typename C>
FSDP_HD_INLINE void scoreRow(C *__restrict s, Flag *__restrict seen, int64_t first, int64_t rows,
                             C scale, const AttentionMask &mask, int64_t offset, int64_t step) {
  if (!mask.data) {
    const AttentionMask none;
    for (int64_t ii = 0; ii < kTile; ++ii) {
      const bool sees = ii >= first && ii < rows;
      s[ii] = sees ? maskedScore<T>(s[ii], scale, none, 0) : negativeInfinity<C>();
      seen[ii] = sees;
    }
    return;
  }
  for (int64_t ii = 0; ii < kTile; ++ii) {
    const bool sees = ii >= first && ii < rows;
    s[ii] = sees ? maskedScore<T>(s[ii], scale, mask, offset + ii * step) : negativeInfinity<C>();
    seen[ii] = sees;
  }
}

/// The forward's scores of key row j of a block, in place (as scoreRow,
/// without flags), and the running tile maxima of the queries that see it.
template <typename T, typename C>
FSDP_HD_INLINE void forwardScoreRow(C *__restrict s, C *__restrict tm, int64_t first, int64_t rows,
                                    C scale, const AttentionMask &mask, int64_t offset,
                                    int64_t step) {
  if (!mask.data) {
    const AttentionMask none;
    for (int64_t ii = 0; ii < kTile; ++ii) {
      const bool sees = ii >= first && ii < rows;
      const C x = maskedScore<T>(s[ii], scale, none, 0);
      s[ii] = sees ? x : negativeInfinity<C>();
      tm[ii] = sees ? maxOf(tm[ii], x) : tm[ii];
    }
    return;
  }
  for (int64_t ii = 0; ii < kTile; ++ii) {
    const bool sees = ii >= first && ii < rows;
    const C x = sees ? maskedScore<T>(s[ii], scale, mask, offset + ii * step) : negativeInfinity<C>();
    s[ii] = x;
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

/// Per-block scratch: the key-major score and dout·v tiles and what the
/// element passes make of them (probabilities, their rounded form, ds and
/// whether a pair is kept), per-query values, and a transposed query tile.
template <typename C> struct BlockScratch {
  std::vector<C> s, dp, pr, cols;
  std::vector<Flag> kept;
  C m[kTile], l[kTile], tm[kTile], mNew[kTile], corr[kTile], sum[kTile];
  Flag active[kTile];

  explicit BlockScratch(int64_t width)
      : s(kTile * kTile), dp(kTile * kTile), pr(kTile * kTile), cols(kTile * width),
        kept(kTile * kTile) {}
};

/// A (batch, kv head)'s keys and values widened, rows padded; `packed`
/// rows ready, for the consecutive tasks of one thread that read them.
template <typename C> struct KeyValueRows {
  std::vector<C> k, v;
  int64_t bg = -1, packed = 0;
};

/// A query tile's operands for the backward: rows (q, dout) row-major and
/// transposed, the rows' lse (-inf past `count`: nothing kept) and delta.
template <typename C> struct QueryTile {
  const C *q, *qCols, *dout, *doutCols, *lse, *delta;
  int64_t first, count;
};

/// A key tile's rows, row-major.
template <typename C> struct KeyTile {
  const C *k, *v;
  int64_t first, count;
};

template <typename T> struct Kernel {
  using C = ComputeType<T>;
  AttentionShape n;
  C scale;
  const T *q, *k, *v;
  /// nn.dropout's scale of a kept probability (used under n.dropout).
  C keepScale;
  /// Packed row widths of q and k, and of v and dout.
  int64_t dp, dvp;

  Kernel(const AttentionShape &shape, C scale, const T *q, const T *k, const T *v, C keepScale)
      : n(shape), scale(scale), q(q), k(k), v(v), keepScale(keepScale),
        dp(roundUp(std::max<int64_t>(shape.d, 1), Blocking<C, 64>::kUnit)),
        dvp(roundUp(std::max<int64_t>(shape.dv, 1), Blocking<C, 64>::kUnit)) {}

  /// The first row of (b, h)'s queries and of (b, g)'s keys.
  int64_t qBase(int64_t b, int64_t h) const { return (b * n.heads + h) * n.tq; }
  int64_t kBase(int64_t b, int64_t g) const { return (b * n.kvHeads + g) * n.tk; }

  /// Key rows [0, rows) of (b, g) packed into kv (rows a multiple of kTile).
  void packKeyValues(int64_t b, int64_t g, int64_t rows, KeyValueRows<C> &kv) const {
    const int64_t bg = b * n.kvHeads + g, padded = roundUp(n.tk, kTile);
    if (kv.bg != bg) {
      kv.k.resize(padded * dp);
      kv.v.resize(padded * dvp);
      kv.bg = bg;
      kv.packed = 0;
    }
    rows = std::min(rows, padded);
    if (kv.packed >= rows)
      return;
    const int64_t real = std::max<int64_t>(0, std::min(rows, n.tk) - kv.packed);
    packRows(k + kBase(b, g) * n.d, kv.packed, real, n.d, dp, rows - kv.packed,
             kv.k.data() + kv.packed * dp);
    packRows(v + kBase(b, g) * n.dv, kv.packed, real, n.dv, dvp, rows - kv.packed,
             kv.v.data() + kv.packed * dvp);
    kv.packed = rows;
  }

  /// st[jj · kTile + ii] = dot(a_jj, b_ii) for jj < rows (a multiple of
  /// kBlockRows) and ii < kTile: a's rows row-major (ld lda), b's
  /// transposed (bCols[x · kTile + ii]), n features.
  template <int Bytes>
  FSDP_HD_INLINE void keyMajorDots(const C *a, int64_t lda, const C *bCols, int64_t features,
                                   int64_t rows, C *st) const {
    for (int64_t jb = 0; jb < rows; jb += kBlockRows)
      Blocking<C, Bytes>::chunks(kTile, [&](int64_t u0, auto w) __attribute__((always_inline)) {
        blocks::dot<Bytes, decltype(w)::value>(a + jb * lda, lda, bCols + u0, kTile, features,
                                               st + jb * kTile + u0, kTile);
      });
  }

  /// Query rows [i0, i0 + kTile) of (b, h): their out rows and lse, from
  /// kv's keys (packed through the tile's last key).
  template <int Bytes>
  FSDP_HD_INLINE void forwardTile(int64_t b, int64_t h, int64_t i0, const KeyValueRows<C> &kv,
                                  T *out, C *lse, std::vector<C> &acc,
                                  BlockScratch<C> &w) const {
    const int64_t rows = std::min(kTile, n.tq - i0);
    C *qCols = w.cols.data(), *st = w.s.data(), *pt = w.pr.data();
    C *m = w.m, *l = w.l, *tm = w.tm, *mNew = w.mNew, *corr = w.corr, *sum = w.sum;
    // The keys of the tile each query sees: a prefix (0 once inactive).
    int64_t seen[kTile];
    packColumns(q + qBase(b, h) * n.d, i0, rows, n.d, qCols);
    std::fill(acc.begin(), acc.begin() + kTile * dvp, C(0));
    for (int64_t ii = 0; ii < kTile; ++ii) {
      m[ii] = negativeInfinity<C>();
      l[ii] = 0;
    }
    // keyEnd grows with i: the tile's last row sees the most keys.
    const int64_t tileEnd = n.keyEnd(i0 + rows - 1);
    for (int64_t t0 = 0; t0 < tileEnd; t0 += kTile) {
      const int64_t keys = std::min(n.tk, t0 + kTile) - t0, keyRows = roundUp(keys, kBlockRows);
      keyMajorDots<Bytes>(kv.k.data() + t0 * dp, dp, qCols, n.d, keyRows, st);
      // Scores, masked; keys a query does not see (causal, past the tile's
      // keys or rows) are -inf; the tile's maxima.
      for (int64_t ii = 0; ii < kTile; ++ii)
        tm[ii] = negativeInfinity<C>();
      for (int64_t jj = 0; jj < keyRows; ++jj) {
        const int64_t j = t0 + jj;
        // Query ii sees key j iff ii < rows and j < keyEnd(i0 + ii).
        const int64_t firstSeeing =
            jj < keys ? std::min<int64_t>(kTile, std::max<int64_t>(0, n.firstQuery(j) - i0))
                      : kTile;
        forwardScoreRow<T>(st + jj * kTile, tm, firstSeeing, rows, scale, n.mask,
                           n.mask.offset(b, h, i0, j), n.mask.stride[2]);
      }
      // A query with no key seen so far but masked ones changes nothing.
      for (int64_t ii = 0; ii < kTile; ++ii) {
        const int64_t count =
            ii < rows ? std::min(keys, std::max<int64_t>(0, n.keyEnd(i0 + ii) - t0)) : 0;
        mNew[ii] = maxOf(m[ii], tm[ii]);
        w.active[ii] = count > 0 && mNew[ii] != negativeInfinity<C>();
        seen[ii] = w.active[ii] ? count : 0;
        corr[ii] = w.active[ii] ? expOf(m[ii] - mNew[ii]) : C(1);
        sum[ii] = 0;
      }
      for (int64_t jj = 0; jj < keyRows; ++jj) {
        C *pRow = pt + jj * kTile;
        probabilityRow<T>(st + jj * kTile, mNew, w.active, sum, pRow);
        if (n.dropout)
          for (int64_t ii = 0; ii < rows; ++ii)
            if (jj < seen[ii])
              pRow[ii] *= dropoutFactor(n, keepScale, b, h, i0 + ii, t0 + jj);
      }
      for (int64_t ii = 0; ii < rows; ++ii) {
        if (!w.active[ii])
          continue;
        C *accRow = acc.data() + ii * dvp;
        for (int64_t x = 0; x < dvp; ++x)
          accRow[x] *= corr[ii];
        l[ii] = l[ii] * corr[ii] + sum[ii];
        m[ii] = mNew[ii];
      }
      // out rows += p · v over each query's seen keys, in key order.
      const Weights<C> pw{pt, nullptr, 1, kTile, true};
      for (int64_t ib = 0; ib < rows; ib += kBlockRows)
        accumulatePrefixes<Bytes>(acc.data() + ib * dvp, dvp, pw.at(ib), seen + ib,
                                  kv.v.data() + t0 * dvp, dvp);
    }
    for (int64_t r = 0; r < rows; ++r) {
      T *o = out + (qBase(b, h) + i0 + r) * n.dv;
      for (int64_t x = 0; x < n.dv; ++x)
        store(o + x, l[r] > 0 ? acc[r * dvp + x] / l[r] : C(0));
      lse[qBase(b, h) + i0 + r] = l[r] > 0 ? m[r] + std::log(l[r]) : negativeInfinity<C>();
    }
  }

  /// What the backward reads besides q, k, v: dout, the forward's lse and
  /// delta_i = dot(dout_i, out_i) per query row.
  struct Grad {
    const T *dout;
    const C *lse, *delta;
  };

  /// Query tile [i0, i0 + kTile) of (b, h) packed: rows into q and dout
  /// (kTile rows of dp, dvp), transposed into qCols and doutCols, lse and
  /// delta into lse and delta (kTile each).
  void packQueryTile(int64_t b, int64_t h, int64_t i0, const Grad &gr, C *qRows, C *qCols,
                     C *doRows, C *doCols, C *lse, C *delta) const {
    const int64_t rows = std::min(kTile, n.tq - i0), base = qBase(b, h);
    packRows(q + base * n.d, i0, rows, n.d, dp, kTile, qRows);
    packColumns(q + base * n.d, i0, rows, n.d, qCols);
    packRows(gr.dout + base * n.dv, i0, rows, n.dv, dvp, kTile, doRows);
    packColumns(gr.dout + base * n.dv, i0, rows, n.dv, doCols);
    for (int64_t ii = 0; ii < kTile; ++ii) {
      lse[ii] = ii < rows ? gr.lse[base + i0 + ii] : negativeInfinity<C>();
      delta[ii] = ii < rows ? gr.delta[base + i0 + ii] : C(0);
    }
  }

  /// One query tile × key tile block of (b, h)'s backward: each pair's
  /// recomputed probability p, the rounded one dv multiplies and ds, then
  /// dv and dk rows += (with dK, dV: the key tile's accumulators) and dq
  /// rows += (with dQ: the query tile's), pairs with p = 0 skipped. Under
  /// dropout, with f its factor (keepScale or 0), dv's weight is the
  /// rounded p · f and ds = p · (dp · f - delta): delta = dot(dout, out) is
  /// still Σ_j p_j f_j dp_j, since out was formed from the dropped p.
  template <int Bytes>
  FSDP_HD_INLINE void blockGrad(int64_t b, int64_t h, const QueryTile<C> &qt,
                                const KeyTile<C> &kt, C *dK, C *dV, C *dQ,
                                BlockScratch<C> &w) const {
    const int64_t i0 = qt.first, rows = qt.count, t0 = kt.first, keys = kt.count;
    const int64_t keyRows = roundUp(keys, kBlockRows);
    C *st = w.s.data(), *dpt = w.dp.data(), *prt = w.pr.data();
    Flag *kept = w.kept.data();
    keyMajorDots<Bytes>(kt.k, dp, qt.qCols, n.d, keyRows, st);
    keyMajorDots<Bytes>(kt.v, dvp, qt.doutCols, n.dv, keyRows, dpt);
    // Whether every pair of the block's real keys and queries is kept.
    bool every = true;
    for (int64_t jj = 0; jj < keyRows; ++jj) {
      const int64_t j = t0 + jj;
      C *sRow = st + jj * kTile, *dRow = dpt + jj * kTile, *prRow = prt + jj * kTile;
      Flag *kRow = kept + jj * kTile;
      const int64_t firstSeeing =
          jj < keys ? std::min<int64_t>(kTile, std::max<int64_t>(0, n.firstQuery(j) - i0)) : kTile;
      scoreRow<T>(sRow, kRow, firstSeeing, rows, scale, n.mask, n.mask.offset(b, h, i0, j),
                  n.mask.stride[2]);
      if (!n.dropout) {
        const bool all = gradRow<T>(sRow, dRow, prRow, kRow, qt.lse, qt.delta, rows);
        every = every && (jj >= keys || all);
        continue;
      }
      for (int64_t ii = 0; ii < kTile; ++ii) {
        const C p = recomputedProbability(sRow[ii], qt.lse[ii]);
        const C f = p != 0 ? dropoutFactor(n, keepScale, b, h, i0 + ii, j) : C(0);
        prRow[ii] = roundedProbability<T>(p) * f;
        dRow[ii] = p * (dRow[ii] * f - qt.delta[ii]);
        kRow[ii] = p != 0;
        every = every && (jj >= keys || ii >= rows || p != 0);
      }
    }
    if (dK) {
      // dv, dk rows (keys) += weight · dout, q rows over the queries.
      const Weights<C> prw{prt, kept, kTile, 1, every}, dsw{dpt, kept, kTile, 1, every};
      for (int64_t jb = 0; jb < keyRows; jb += kBlockRows) {
        const int64_t from = std::min(rows, std::max<int64_t>(0, n.firstQuery(t0 + jb) - i0));
        accumulateBlock<Bytes>(dV + jb * dvp, dvp, dvp, prw.at(jb), qt.dout, dvp, from, rows);
        accumulateBlock<Bytes>(dK + jb * dp, dp, dp, dsw.at(jb), qt.q, dp, from, rows);
      }
    }
    if (dQ) {
      // dq rows (queries) += ds · k over the keys.
      const Weights<C> dsw{dpt, kept, 1, kTile, every};
      for (int64_t ib = 0; ib < rows; ib += kBlockRows) {
        const int64_t last = std::min(rows - 1, ib + kBlockRows - 1);
        const int64_t end = std::min(keys, std::max<int64_t>(0, n.keyEnd(i0 + last) - t0));
        accumulateBlock<Bytes>(dQ + ib * dp, dp, dp, dsw.at(ib), kt.k, dp, 0, end);
      }
    }
  }

  /// The first query tile any of key tile [t0, t0 + kTile)'s keys sees.
  int64_t firstQueryTile(int64_t t0) const { return n.firstQuery(t0) / kTile * kTile; }
};

/// Scratch of a backward task: packed query tiles and accumulators.
template <typename C> struct GradScratch {
  std::vector<C> q, qCols, dout, doutCols, lse, delta, dK, dV, dQ;
};

template <typename T>
Status runForward(const Kernel<T> &kern, const TensorRef &out, const TensorRef &lse) {
  using C = ComputeType<T>;
  const AttentionShape &n = kern.n;
  const int64_t tiles = tilesOf(n.tq);
  return parallelFor(0, n.batch * n.heads * tiles, 1, [&](int64_t begin, int64_t end) {
    BlockScratch<C> w(std::max<int64_t>(n.d, 1));
    KeyValueRows<C> kv;
    std::vector<C> acc(kTile * kern.dvp);
    runWideFmaSized([&](auto bytes) __attribute__((always_inline)) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / tiles, b = bh / n.heads, h = bh % n.heads;
        const int64_t i0 = task % tiles * kTile, rows = std::min(kTile, n.tq - i0);
        kern.packKeyValues(b, n.kvHead(h), roundUp(n.keyEnd(i0 + rows - 1), kTile), kv);
        kern.template forwardTile<decltype(bytes)::value>(b, h, i0, kv, out.as<T>(),
                                                          lse.as<C>(), acc, w);
      }
    });
  });
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

template <typename T> struct Backward {
  using C = ComputeType<T>;
  const Kernel<T> &kern;
  const typename Kernel<T>::Grad &grad;
  T *dq, *dk, *dv;

  const AttentionShape &n() const { return kern.n; }

  /// Query tile `tile` of (b, h) packed into the tile-th slot of g's
  /// buffers.
  QueryTile<C> packQueries(int64_t b, int64_t h, int64_t tile, GradScratch<C> &g) const {
    const int64_t i0 = tile * kTile;
    kern.packQueryTile(b, h, i0, grad, g.q.data() + i0 * kern.dp,
                       g.qCols.data() + tile * kTile * n().d, g.dout.data() + i0 * kern.dvp,
                       g.doutCols.data() + tile * kTile * n().dv, g.lse.data() + i0,
                       g.delta.data() + i0);
    return view(tile, g);
  }
  QueryTile<C> view(int64_t tile, const GradScratch<C> &g) const {
    const int64_t i0 = tile * kTile;
    return {g.q.data() + i0 * kern.dp, g.qCols.data() + tile * kTile * n().d,
            g.dout.data() + i0 * kern.dvp, g.doutCols.data() + tile * kTile * n().dv,
            g.lse.data() + i0, g.delta.data() + i0, i0, std::min(kTile, n().tq - i0)};
  }
  /// Query tile [i0, i0 + kTile) of (b, h) packed into g's one slot.
  QueryTile<C> packOne(int64_t b, int64_t h, int64_t i0, GradScratch<C> &g) const {
    kern.packQueryTile(b, h, i0, grad, g.q.data(), g.qCols.data(), g.dout.data(),
                       g.doutCols.data(), g.lse.data(), g.delta.data());
    QueryTile<C> qt = view(0, g);
    qt.first = i0;
    qt.count = std::min(kTile, n().tq - i0);
    return qt;
  }
  static void reserve(GradScratch<C> &g, int64_t queryTiles, const Kernel<T> &kern,
                      int64_t keyRows, int64_t dqRows) {
    const int64_t rows = queryTiles * kTile;
    g.q.resize(rows * kern.dp);
    g.qCols.resize(rows * std::max<int64_t>(kern.n.d, 1));
    g.dout.resize(rows * kern.dvp);
    g.doutCols.resize(rows * std::max<int64_t>(kern.n.dv, 1));
    g.lse.resize(rows);
    g.delta.resize(rows);
    g.dK.resize(keyRows * kern.dp);
    g.dV.resize(keyRows * kern.dvp);
    g.dQ.resize(dqRows * kern.dp);
  }

  void storeKeys(int64_t b, int64_t g, int64_t j0, int64_t count, const GradScratch<C> &s) const {
    for (int64_t jj = 0; jj < count; ++jj) {
      const int64_t row = kern.kBase(b, g) + j0 + jj;
      for (int64_t x = 0; x < n().d; ++x)
        store(dk + row * n().d + x, s.dK[jj * kern.dp + x] * kern.scale);
      for (int64_t x = 0; x < n().dv; ++x)
        store(dv + row * n().dv + x, s.dV[jj * kern.dvp + x]);
    }
  }
  void storeQueries(int64_t b, int64_t h, int64_t i0, int64_t count, const C *dQ) const {
    for (int64_t ii = 0; ii < count; ++ii) {
      T *row = dq + (kern.qBase(b, h) + i0 + ii) * n().d;
      for (int64_t x = 0; x < n().d; ++x)
        store(row + x, dQ[ii * kern.dp + x] * kern.scale);
    }
  }

  /// (b, g)'s whole backward: its keys packed once; each head's queries
  /// packed once, its key tiles in order, dq accumulated on the way.
  template <int Bytes>
  FSDP_HD_INLINE void group(int64_t b, int64_t g, KeyValueRows<C> &kv, GradScratch<C> &s,
                            BlockScratch<C> &w) const {
    const int64_t keyTiles = tilesOf(n().tk), queryTiles = tilesOf(n().tq);
    const int64_t heads = n().heads / n().kvHeads;
    kern.packKeyValues(b, g, keyTiles * kTile, kv);
    std::fill(s.dK.begin(), s.dK.end(), C(0));
    std::fill(s.dV.begin(), s.dV.end(), C(0));
    for (int64_t h = g * heads; h < (g + 1) * heads; ++h) {
      for (int64_t t = 0; t < queryTiles; ++t)
        packQueries(b, h, t, s);
      std::fill(s.dQ.begin(), s.dQ.end(), C(0));
      for (int64_t t = 0; t < keyTiles; ++t) {
        const int64_t t0 = t * kTile;
        const KeyTile<C> kt{kv.k.data() + t0 * kern.dp, kv.v.data() + t0 * kern.dvp, t0,
                            std::min(kTile, n().tk - t0)};
        for (int64_t i0 = kern.firstQueryTile(t0); i0 < n().tq; i0 += kTile)
          kern.template blockGrad<Bytes>(b, h, view(i0 / kTile, s), kt,
                                         s.dK.data() + t0 * kern.dp, s.dV.data() + t0 * kern.dvp,
                                         s.dQ.data() + i0 * kern.dp, w);
      }
      storeQueries(b, h, 0, n().tq, s.dQ.data());
    }
    storeKeys(b, g, 0, n().tk, s);
  }

  /// Key tile [t0, t0 + kTile) of (b, g): its dk and dv rows, over the
  /// group's heads, then query tiles, in order.
  template <int Bytes>
  FSDP_HD_INLINE void keyTile(int64_t b, int64_t g, int64_t t0, KeyValueRows<C> &kv,
                              GradScratch<C> &s, BlockScratch<C> &w) const {
    const int64_t heads = n().heads / n().kvHeads, count = std::min(kTile, n().tk - t0);
    kern.packKeyValues(b, g, t0 + kTile, kv);
    const KeyTile<C> kt{kv.k.data() + t0 * kern.dp, kv.v.data() + t0 * kern.dvp, t0, count};
    std::fill(s.dK.begin(), s.dK.end(), C(0));
    std::fill(s.dV.begin(), s.dV.end(), C(0));
    for (int64_t h = g * heads; h < (g + 1) * heads; ++h)
      for (int64_t i0 = kern.firstQueryTile(t0); i0 < n().tq; i0 += kTile) {
        kern.template blockGrad<Bytes>(b, h, packOne(b, h, i0, s), kt, s.dK.data(),
                                       s.dV.data(), static_cast<C *>(nullptr), w);
      }
    storeKeys(b, g, t0, count, s);
  }

  /// Query tile [i0, i0 + kTile) of (b, h): its dq rows, key tiles in order.
  template <int Bytes>
  FSDP_HD_INLINE void queryTile(int64_t b, int64_t h, int64_t i0, KeyValueRows<C> &kv,
                                GradScratch<C> &s, BlockScratch<C> &w) const {
    const int64_t rows = std::min(kTile, n().tq - i0);
    const int64_t tileEnd = n().keyEnd(i0 + rows - 1);
    kern.packKeyValues(b, n().kvHead(h), roundUp(tileEnd, kTile), kv);
    const QueryTile<C> qt = packOne(b, h, i0, s);
    std::fill(s.dQ.begin(), s.dQ.end(), C(0));
    for (int64_t t0 = 0; t0 < tileEnd; t0 += kTile) {
      const KeyTile<C> kt{kv.k.data() + t0 * kern.dp, kv.v.data() + t0 * kern.dvp, t0,
                          std::min(kTile, n().tk - t0)};
      kern.template blockGrad<Bytes>(b, h, qt, kt, static_cast<C *>(nullptr),
                                     static_cast<C *>(nullptr), s.dQ.data(), w);
    }
    storeQueries(b, h, i0, rows, s.dQ.data());
  }
};

template <typename T>
Status runBackward(const Kernel<T> &kern, const TensorRef &out, const TensorRef &lse,
                   const TensorRef &dout, const TensorRef &dq, const TensorRef &dk,
                   const TensorRef &dv) {
  using C = ComputeType<T>;
  const AttentionShape &n = kern.n;
  const T *O = out.as<T>(), *dO = dout.as<T>();
  // delta_i = dot(dout_i, out_i), once per query row, in feature order.
  std::vector<C> delta(static_cast<size_t>(n.batch * n.heads * n.tq));
  FSDP_RETURN_IF_ERROR(
      parallelFor(0, n.batch * n.heads * n.tq, rowGrain(n.dv), [&](int64_t begin, int64_t end) {
        runWideFma([&] {
          for (int64_t r = begin; r < end; ++r) {
            C acc = 0;
            for (int64_t x = 0; x < n.dv; ++x)
              acc = multiplyAdd(load(dO + r * n.dv + x), load(O + r * n.dv + x), acc);
            delta[r] = acc;
          }
        });
      }));
  const typename Kernel<T>::Grad grad{dO, lse.as<C>(), delta.data()};
  const Backward<T> pass{kern, grad, dq.as<T>(), dk.as<T>(), dv.as<T>()};
  const int64_t keyTiles = tilesOf(n.tk), queryTiles = tilesOf(n.tq);
  const int64_t groups = n.batch * n.kvHeads;
  const int64_t width = std::max<int64_t>({n.d, n.dv, 1});
  if (singlePass(groups))
    return parallelFor(0, groups, 1, [&](int64_t begin, int64_t end) {
      BlockScratch<C> w(width);
      KeyValueRows<C> kv;
      GradScratch<C> s;
      Backward<T>::reserve(s, queryTiles, kern, keyTiles * kTile, queryTiles * kTile);
      runWideFmaSized([&](auto bytes) __attribute__((always_inline)) {
        for (int64_t bg = begin; bg < end; ++bg)
          pass.template group<decltype(bytes)::value>(bg / n.kvHeads, bg % n.kvHeads, kv, s, w);
      });
    });
  FSDP_RETURN_IF_ERROR(parallelFor(0, groups * keyTiles, 1, [&](int64_t begin, int64_t end) {
    BlockScratch<C> w(width);
    KeyValueRows<C> kv;
    GradScratch<C> s;
    Backward<T>::reserve(s, 1, kern, kTile, 0);
    runWideFmaSized([&](auto bytes) __attribute__((always_inline)) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bg = task / keyTiles;
        pass.template keyTile<decltype(bytes)::value>(bg / n.kvHeads, bg % n.kvHeads,
                                                      task % keyTiles * kTile, kv, s, w);
      }
    });
  }));
  return parallelFor(0, n.batch * n.heads * queryTiles, 1, [&](int64_t begin, int64_t end) {
    BlockScratch<C> w(width);
    KeyValueRows<C> kv;
    GradScratch<C> s;
    Backward<T>::reserve(s, 1, kern, 0, kTile);
    runWideFmaSized([&](auto bytes) __attribute__((always_inline)) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / queryTiles;
        pass.template queryTile<decltype(bytes)::value>(bh / n.heads, bh % n.heads,
                                                        task % queryTiles * kTile, kv, s, w);
      }
    });
  });
}

} // namespace

Status attention(const TensorRef &q, const TensorRef &k, const TensorRef &v, const TensorRef *mask,
                 bool causal, float scale, const AttentionDropout &dropout, const TensorRef &out,
                 const TensorRef &lse) {
  AttentionShape shape;
  FSDP_RETURN_IF_ERROR(attentionShape(q, k, v, mask, causal, out, lse, shape));
  FSDP_RETURN_IF_ERROR(attentionDropout("attention", dropout, shape));
  Status status = Status::ok();
  FSDP_RETURN_IF_ERROR(dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        const Kernel<T> kern(shape, static_cast<C>(scale), q.as<T>(), k.as<T>(), v.as<T>(),
                             dropoutKeepScale<C>(dropout.p));
        status = runForward(kern, out, lse);
      },
      "attention"));
  return status;
}

Status attentionGrad(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                     const TensorRef *mask, const TensorRef &out, const TensorRef &lse,
                     const TensorRef &dout, bool causal, float scale,
                     const AttentionDropout &dropout, const TensorRef &dq, const TensorRef &dk,
                     const TensorRef &dv) {
  AttentionShape shape;
  FSDP_RETURN_IF_ERROR(
      attentionGradShape(q, k, v, mask, out, lse, dout, causal, dq, dk, dv, shape));
  FSDP_RETURN_IF_ERROR(attentionDropout("attention_grad", dropout, shape));
  Status status = Status::ok();
  FSDP_RETURN_IF_ERROR(dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        const Kernel<T> kern(shape, static_cast<C>(scale), q.as<T>(), k.as<T>(), v.as<T>(),
                             dropoutKeepScale<C>(dropout.p));
        status = runBackward(kern, out, lse, dout, dq, dk, dv);
      },
      "attention_grad"));
  return status;
}

} // namespace fsdp::rt::cpu
