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
// wide-loop copy (runWideFmaSized); a block's element passes, weights and
// packing are AttentionBlocks.h's. Every sum of products is an explicit
// fused multiply-add (multiplyAdd) and the file is built with
// -ffp-contract=off, so nothing else is fused on any target and the bits
// are the CUDA build's (-fmad=false). Operands are packed widened to C,
// rows padded to 64 bytes, once per (batch, kv head) where a task walks
// a whole head, so the packing is not repeated per block.
//
// These are the exact kernels: every f32 and f64 attention, and 16-bit
// attention under FSDP_CPU_GEMM=widen|naive, with dropout, or where oneDNN
// does not take the type; otherwise 16-bit attention runs its products
// through oneDNN (AttentionGemms.h, within tolerance of these).
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
#include "runtime/backends/cpu/kernels/AttentionBlocks.h"
#include "runtime/backends/cpu/kernels/AttentionGemms.h"
#include "runtime/backends/cpu/kernels/BlockKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

using namespace attentionblock;

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
    packRows(k + n.keyRow0(b, g) * n.d, kv.packed, real, n.d, dp, rows - kv.packed,
             kv.k.data() + kv.packed * dp);
    packRows(v + n.keyRow0(b, g) * n.dv, kv.packed, real, n.dv, dvp, rows - kv.packed,
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
    packColumns(q + n.queryRow0(b, h) * n.d, i0, rows, n.d, qCols);
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
        scoreRow<T, true>(st + jj * kTile, tm, firstSeeing(n, j, jj < keys, i0), rows, scale,
                          n.mask, n.mask.offset(b, h, i0, j), n.mask.stride[2]);
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
      T *o = out + (n.queryRow0(b, h) + i0 + r) * n.dv;
      for (int64_t x = 0; x < n.dv; ++x)
        store(o + x, l[r] > 0 ? acc[r * dvp + x] / l[r] : C(0));
      lse[n.queryRow0(b, h) + i0 + r] = l[r] > 0 ? m[r] + std::log(l[r]) : negativeInfinity<C>();
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
    const int64_t rows = std::min(kTile, n.tq - i0), base = n.queryRow0(b, h);
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
      scoreRow<T, false>(sRow, static_cast<C *>(nullptr), firstSeeing(n, j, jj < keys, i0),
                         rows, scale, n.mask, n.mask.offset(b, h, i0, j), n.mask.stride[2]);
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

template <typename T> struct Backward {
  using C = ComputeType<T>;
  const Kernel<T> &kern;
  const typename Kernel<T>::Grad &grad;
  T *dq, *dk, *dv;

  const AttentionShape &n() const { return kern.n; }

  /// Slot `slot` of g's packed query buffers, seen as query tile
  /// [i0, i0 + kTile).
  QueryTile<C> view(int64_t slot, int64_t i0, GradScratch<C> &g) const {
    const int64_t row = slot * kTile;
    return {g.q.data() + row * kern.dp,     g.qCols.data() + row * n().d,
            g.dout.data() + row * kern.dvp, g.doutCols.data() + row * n().dv,
            g.lse.data() + row,             g.delta.data() + row,
            i0,                             std::min(kTile, n().tq - i0)};
  }
  /// Query tile [i0, i0 + kTile) of (b, h) packed into slot `slot`.
  QueryTile<C> pack(int64_t b, int64_t h, int64_t i0, int64_t slot, GradScratch<C> &g) const {
    const int64_t row = slot * kTile;
    kern.packQueryTile(b, h, i0, grad, g.q.data() + row * kern.dp, g.qCols.data() + row * n().d,
                       g.dout.data() + row * kern.dvp, g.doutCols.data() + row * n().dv,
                       g.lse.data() + row, g.delta.data() + row);
    return view(slot, i0, g);
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
      const int64_t row = kern.n.keyRow0(b, g) + j0 + jj;
      for (int64_t x = 0; x < n().d; ++x)
        store(dk + row * n().d + x, s.dK[jj * kern.dp + x] * kern.scale);
      for (int64_t x = 0; x < n().dv; ++x)
        store(dv + row * n().dv + x, s.dV[jj * kern.dvp + x]);
    }
  }
  void storeQueries(int64_t b, int64_t h, int64_t i0, int64_t count, const C *dQ) const {
    for (int64_t ii = 0; ii < count; ++ii) {
      T *row = dq + (kern.n.queryRow0(b, h) + i0 + ii) * n().d;
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
        pack(b, h, t * kTile, t, s);
      std::fill(s.dQ.begin(), s.dQ.end(), C(0));
      for (int64_t t = 0; t < keyTiles; ++t) {
        const int64_t t0 = t * kTile;
        const KeyTile<C> kt{kv.k.data() + t0 * kern.dp, kv.v.data() + t0 * kern.dvp, t0,
                            std::min(kTile, n().tk - t0)};
        for (int64_t i0 = kern.firstQueryTile(t0); i0 < n().tq; i0 += kTile)
          kern.template blockGrad<Bytes>(b, h, view(i0 / kTile, i0, s), kt,
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
      for (int64_t i0 = kern.firstQueryTile(t0); i0 < n().tq; i0 += kTile)
        kern.template blockGrad<Bytes>(b, h, pack(b, h, i0, 0, s), kt, s.dK.data(), s.dV.data(),
                                       static_cast<C *>(nullptr), w);
    storeKeys(b, g, t0, count, s);
  }

  /// Query tile [i0, i0 + kTile) of (b, h): its dq rows, key tiles in order.
  template <int Bytes>
  FSDP_HD_INLINE void queryTile(int64_t b, int64_t h, int64_t i0, KeyValueRows<C> &kv,
                                GradScratch<C> &s, BlockScratch<C> &w) const {
    const int64_t rows = std::min(kTile, n().tq - i0);
    const int64_t tileEnd = n().keyEnd(i0 + rows - 1);
    kern.packKeyValues(b, n().kvHead(h), roundUp(tileEnd, kTile), kv);
    const QueryTile<C> qt = pack(b, h, i0, 0, s);
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
  const T *dO = dout.as<T>();
  std::vector<C> delta;
  FSDP_RETURN_IF_ERROR(rowDeltas(n, dO, out.as<T>(), delta));
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
  bool gemms = false;
  FSDP_RETURN_IF_ERROR(attentionTakesGemms(q.dtype, shape, gemms));
  Status status = Status::ok();
  FSDP_RETURN_IF_ERROR(dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        if constexpr (std::is_same_v<T, BF16> || std::is_same_v<T, F16>)
          if (gemms) {
            status = attentionByGemms(shape, scale, q.as<T>(), k.as<T>(), v.as<T>(), out.as<T>(),
                                      lse.as<float>());
            return;
          }
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
  bool gemms = false;
  FSDP_RETURN_IF_ERROR(attentionTakesGemms(q.dtype, shape, gemms));
  Status status = Status::ok();
  FSDP_RETURN_IF_ERROR(dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        if constexpr (std::is_same_v<T, BF16> || std::is_same_v<T, F16>)
          if (gemms) {
            status = attentionGradByGemms(shape, scale, q.as<T>(), k.as<T>(), v.as<T>(),
                                          out.as<T>(), lse.as<float>(), dout.as<T>(), dq.as<T>(),
                                          dk.as<T>(), dv.as<T>());
            return;
          }
        const Kernel<T> kern(shape, static_cast<C>(scale), q.as<T>(), k.as<T>(), v.as<T>(),
                             dropoutKeepScale<C>(dropout.p));
        status = runBackward(kern, out, lse, dout, dq, dk, dv);
      },
      "attention_grad"));
  return status;
}

} // namespace fsdp::rt::cpu
