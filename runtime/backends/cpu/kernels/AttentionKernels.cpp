//===- AttentionKernels.cpp - flash-style scaled dot-product attention ----===//
//
// nn.attention's kernels (Kernels.def's Attention and AttentionGrad rows):
// softmax(q kᵀ · scale + mask) v without the B·H·Tq·Tk scores. The forward
// walks each query row's keys in tiles of kAttentionKeyTile with an online
// softmax (running max and sum, the accumulated output rescaled when the
// max grows) and saves only the output and the row's log-sum-exp; the
// backward recomputes each probability from the log-sum-exp, in one pass
// over key rows for dk and dv and one over query rows for dq, or, when
// there are enough (batch, kv head) tasks for the threads, in one pass that
// adds each pair's dq term on the way in the dq pass's order; every result
// element is written by one task in a fixed order: no atomics, and the
// bits do not depend on the thread count or on which way ran. Compute is in f32 (f64 for
// f64), 16-bit operands widened exactly; as torch's CPU flash kernel does,
// the probabilities that multiply the values are rounded to the operand
// dtype first; dropout (dropout_p) multiplies those by nn.dropout's keep
// factor, drawn again in the backward. A row whose every key is masked gives zeros and lse -inf,
// as torch >= 2.5 (its "safe" softmax; checked with torch 2.15: math and
// flash backends both give 0).
//
// Each element's arithmetic is the plain loops' (a dot product summed from
// +0 in increasing feature order, then scaled and masked; accumulations in
// increasing key, or head then query, order; AttentionShape.h's formulas),
// which the CUDA twin (cuda/kernels/AttentionKernels.cu) runs one thread
// per row. Speed comes from doing many independent elements at once, never
// from reordering one: a task owns a tile of 64 query rows (forward, dq) or
// keys (dk, dv) and packs the other side's tile widened to C, transposed
// for the dot products so that 64 of them advance together along the
// features (vectorized across keys or queries), and row-major for the
// accumulations (vectorized along the features, eight rows a pass). The
// loops run compiled for AVX2 and FMA where the CPU has them (runWideFma);
// every sum of products is an explicit fused multiply-add (multiplyAdd)
// and the file is built with -ffp-contract=off, so nothing else is fused
// on any target and the bits are the CUDA build's (-fmad=false).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include "runtime/backends/AttentionShape.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

/// Columns of a transposed pack, and rows of a task: the forward's key
/// tile (part of the bits) and, elsewhere, a size for speed only.
constexpr int64_t kTile = kAttentionKeyTile;

/// out[u] = Σ_x a[x] · bt[x · kTile + u] for every u < kTile, each sum from
/// +0 in increasing x: kTile dot products in the scalar loop's order, the
/// accumulators of a block of columns kept in registers across x.
template <typename C> FSDP_HD_INLINE void dotsAcross(const C *a, const C *bt, int64_t d, C *out) {
  constexpr int kBlock = 256 / sizeof(C); // eight AVX2 registers
  for (int u0 = 0; u0 < kTile; u0 += kBlock) {
    C acc[kBlock] = {};
    for (int64_t x = 0; x < d; ++x) {
      const C ax = a[x];
      const C *row = bt + x * kTile + u0;
      for (int u = 0; u < kBlock; ++u)
        acc[u] = multiplyAdd(ax, row[u], acc[u]);
    }
    for (int u = 0; u < kBlock; ++u)
      out[u0 + u] = acc[u];
  }
}

/// acc[x] += w[c] · rows[c][x] for c = 0, 1, ... in order, for every
/// x < n: the sequential accumulation, eight (then four) rows per pass
/// over acc.
template <typename C>
FSDP_HD_INLINE void accumulateRows(C *acc, int64_t n, const C *w, const C *const *rows,
                                   int64_t count) {
  int64_t c = 0;
  for (; c + 8 <= count; c += 8) {
    const C *r[8];
    C wc[8];
    for (int e = 0; e < 8; ++e) {
      r[e] = rows[c + e];
      wc[e] = w[c + e];
    }
    for (int64_t x = 0; x < n; ++x) {
      C a = acc[x];
      a = multiplyAdd(wc[0], r[0][x], a);
      a = multiplyAdd(wc[1], r[1][x], a);
      a = multiplyAdd(wc[2], r[2][x], a);
      a = multiplyAdd(wc[3], r[3][x], a);
      a = multiplyAdd(wc[4], r[4][x], a);
      a = multiplyAdd(wc[5], r[5][x], a);
      a = multiplyAdd(wc[6], r[6][x], a);
      a = multiplyAdd(wc[7], r[7][x], a);
      acc[x] = a;
    }
  }
  for (; c + 4 <= count; c += 4) {
    const C w0 = w[c], w1 = w[c + 1], w2 = w[c + 2], w3 = w[c + 3];
    const C *r0 = rows[c], *r1 = rows[c + 1], *r2 = rows[c + 2], *r3 = rows[c + 3];
    for (int64_t x = 0; x < n; ++x) {
      C a = acc[x];
      a = multiplyAdd(w0, r0[x], a);
      a = multiplyAdd(w1, r1[x], a);
      a = multiplyAdd(w2, r2[x], a);
      a = multiplyAdd(w3, r3[x], a);
      acc[x] = a;
    }
  }
  for (; c < count; ++c)
    for (int64_t x = 0; x < n; ++x)
      acc[x] = multiplyAdd(w[c], rows[c][x], acc[x]);
}

/// Widens rows [first, first + count) of a [*, width] tensor into C:
/// row-major into `rows` (width per row) and, when `columns` is set,
/// transposed into columns[x · kTile + r], zero past `count`.
template <typename T, typename C>
FSDP_HD_INLINE void packRows(const T *src, int64_t first, int64_t count, int64_t width, C *rows,
                             C *columns) {
  for (int64_t r = 0; r < count; ++r)
    for (int64_t x = 0; x < width; ++x)
      rows[r * width + x] = load(src + (first + r) * width + x);
  if (!columns)
    return;
  for (int64_t x = 0; x < width; ++x) {
    for (int64_t r = 0; r < count; ++r)
      columns[x * kTile + r] = rows[r * width + x];
    for (int64_t r = count; r < kTile; ++r)
      columns[x * kTile + r] = C(0);
  }
}

/// Query rows whose sequential chains (running maximum, sum) advance
/// together in the forward.
constexpr int kGroup = 4;

/// step(e, u) for u < count[e], for each e < kGroup, in increasing u for
/// each e, the kGroup sequences interleaved (step e's u-th after every
/// sequence's (u-1)-th) so the CPU overlaps their latencies.
template <typename Step> FSDP_HD_INLINE void interleaved(const int64_t *count, Step step) {
  int64_t common = 0;
  for (int e = 0; e < kGroup; ++e)
    if (count[e] > 0)
      common = common == 0 ? count[e] : std::min(common, count[e]);
  int64_t u = 0;
  for (; u < common; ++u)
    for (int e = 0; e < kGroup; ++e)
      if (count[e] > 0)
        step(e, u);
  for (int e = 0; e < kGroup; ++e)
    for (int64_t v = u; v < count[e]; ++v)
      step(e, v);
}

/// A task's widened tiles and per-row values, allocated once per chunk of
/// tasks: its own rows (A, B), the other side's tile row-major and
/// transposed, its accumulators, and per-column lists.
template <typename C> struct Scratch {
  std::vector<C> ownA, ownB, rowsA, rowsB, colsA, colsB, accA, accB;
  std::vector<C> s, dp, wA, wB, m, l;
  std::vector<const C *> listA, listB;
  /// The single-pass backward's ds of a query tile × key tile, query-major,
  /// and whether each pair contributes (p != 0).
  std::vector<C> dsT;
  std::vector<uint8_t> keptT;

  explicit Scratch(const AttentionShape &n) {
    const size_t tile = kTile * static_cast<size_t>(std::max<int64_t>({n.d, n.dv, 1}));
    for (std::vector<C> *b : {&ownA, &ownB, &rowsA, &rowsB, &colsA, &colsB, &accA, &accB})
      b->resize(tile);
    for (std::vector<C> *b : {&s, &dp, &wA, &wB, &m, &l})
      b->resize(kTile * kGroup);
    listA.resize(kTile);
    listB.resize(kTile);
    dsT.resize(kTile * kTile);
    keptT.resize(kTile * kTile);
  }
};

/// The tasks' bodies are FSDP_HD_INLINE (always inline) so that they are
/// compiled into runWideFma's AVX2 copy, not called from it.
template <typename T> struct Kernel {
  using C = ComputeType<T>;
  AttentionShape n;
  C scale;
  const T *q, *k, *v;
  /// nn.dropout's scale of a kept probability (used under n.dropout).
  C keepScale;

  /// The first row of (b, h)'s queries and of (b, g)'s keys.
  int64_t qBase(int64_t b, int64_t h) const { return (b * n.heads + h) * n.tq; }
  int64_t kBase(int64_t b, int64_t g) const { return (b * n.kvHeads + g) * n.tk; }

  /// s[u] for u < count: the scores from their dot products, scaled and
  /// masked (the mask at offset + u · step); a loop without the mask's
  /// branches when there is none.
  FSDP_HD_INLINE void scoresFromDots(C *s, int64_t count, int64_t offset, int64_t step) const {
    if (!n.mask.data) {
      for (int64_t u = 0; u < count; ++u)
        s[u] = maskedScore<T>(s[u], scale, n.mask, 0);
      return;
    }
    for (int64_t u = 0; u < count; ++u)
      s[u] = maskedScore<T>(s[u], scale, n.mask, offset + u * step);
  }

  /// For u < count, from the masked scores s, dp = dot(dout_i, v_j), and
  /// the query rows' lse and delta: the probability p (recomputed), the
  /// rounded one dv multiplies, and ds = p · (dp - delta). Where p is 0
  /// the others are unused (the accumulations skip the pair). Under
  /// dropout, with f = dropFactor(u) (keepScale or 0), dv's weight is the
  /// rounded p · f and ds = p · (dp · f - delta): delta = dot(dout, out)
  /// is still Σ_j p_j f_j dp_j, since out was formed from the dropped p.
  template <typename LseOf, typename DeltaOf, typename DropOf>
  FSDP_HD_INLINE void gradTerms(const C *s, const C *dp, LseOf lseOf, DeltaOf deltaOf,
                                DropOf dropFactor, int64_t count, C *p, C *pr, C *ds) const {
    if (!n.dropout) {
      for (int64_t u = 0; u < count; ++u) {
        p[u] = recomputedProbability(s[u], lseOf(u));
        pr[u] = roundedProbability<T>(p[u]);
        ds[u] = p[u] * (dp[u] - deltaOf(u));
      }
      return;
    }
    for (int64_t u = 0; u < count; ++u) {
      const C f = dropFactor(u);
      p[u] = recomputedProbability(s[u], lseOf(u));
      pr[u] = roundedProbability<T>(p[u]) * f;
      ds[u] = p[u] * (dp[u] * f - deltaOf(u));
    }
  }

  /// Query rows [i0, i0 + kTile) of (b, h): their out rows and lse. Rows
  /// go kGroup at a time so that their sequential running maxima and sums
  /// (each row's own order) are independent chains that overlap.
  FSDP_HD_INLINE void forwardTile(int64_t b, int64_t h, int64_t i0, T *out, C *lse,
                                  Scratch<C> &w) const {
    const int64_t g = n.kvHead(h), rows = std::min(kTile, n.tq - i0);
    C *qw = w.ownA.data(), *kCols = w.colsA.data(), *vw = w.rowsB.data(), *acc = w.accA.data();
    C *m = w.m.data(), *l = w.l.data();
    packRows(q + qBase(b, h) * n.d, i0, rows, n.d, qw, static_cast<C *>(nullptr));
    std::fill(acc, acc + rows * n.dv, C(0));
    std::fill(m, m + rows, negativeInfinity<C>());
    std::fill(l, l + rows, C(0));
    for (int64_t jj = 0; jj < kTile; ++jj)
      w.listA[jj] = vw + jj * n.dv;
    // keyEnd grows with i: the tile's last row sees the most keys.
    const int64_t tileEnd = n.keyEnd(i0 + rows - 1);
    for (int64_t t0 = 0; t0 < tileEnd; t0 += kTile) {
      const int64_t keys = std::min(n.tk, t0 + kTile) - t0;
      packRows(k + kBase(b, g) * n.d, t0, keys, n.d, w.rowsA.data(), kCols);
      packRows(v + kBase(b, g) * n.dv, t0, keys, n.dv, vw, static_cast<C *>(nullptr));
      for (int64_t r0 = 0; r0 < rows; r0 += kGroup) {
        // count[e]: the keys of this tile row r0 + e sees (0: none).
        int64_t count[kGroup];
        C *s[kGroup], *p[kGroup];
        for (int e = 0; e < kGroup; ++e) {
          const int64_t r = r0 + e, i = i0 + r;
          s[e] = w.s.data() + e * kTile;
          p[e] = w.wA.data() + e * kTile;
          count[e] = r < rows && t0 < n.keyEnd(i) ? std::min(n.keyEnd(i), t0 + kTile) - t0 : 0;
          if (count[e] == 0)
            continue;
          dotsAcross(qw + r * n.d, kCols, n.d, s[e]);
          scoresFromDots(s[e], count[e], n.mask.offset(b, h, i, t0), n.mask.stride[3]);
        }
        C tm[kGroup], sum[kGroup];
        for (int e = 0; e < kGroup; ++e)
          tm[e] = negativeInfinity<C>();
        interleaved(count, [&](int e, int64_t jj) { tm[e] = maxOf(tm[e], s[e][jj]); });
        C mNew[kGroup], corr[kGroup];
        for (int e = 0; e < kGroup; ++e) {
          if (count[e] == 0)
            continue;
          const int64_t r = r0 + e;
          mNew[e] = maxOf(m[r], tm[e]);
          if (mNew[e] == negativeInfinity<C>()) {
            count[e] = 0; // every key so far masked: nothing changes
            continue;
          }
          corr[e] = expOf(m[r] - mNew[e]);
          C *accRow = acc + r * n.dv;
          for (int64_t x = 0; x < n.dv; ++x)
            accRow[x] *= corr[e];
          for (int64_t jj = 0; jj < count[e]; ++jj)
            p[e][jj] = expOf(s[e][jj] - mNew[e]);
          sum[e] = 0;
        }
        interleaved(count, [&](int e, int64_t jj) { sum[e] += p[e][jj]; });
        for (int e = 0; e < kGroup; ++e) {
          if (count[e] == 0)
            continue;
          const int64_t r = r0 + e;
          for (int64_t jj = 0; jj < count[e]; ++jj)
            p[e][jj] = roundedProbability<T>(p[e][jj]);
          if (n.dropout)
            for (int64_t jj = 0; jj < count[e]; ++jj)
              p[e][jj] *= dropoutFactor(n, keepScale, b, h, i0 + r, t0 + jj);
          accumulateRows(acc + r * n.dv, n.dv, p[e], w.listA.data(), count[e]);
          l[r] = l[r] * corr[e] + sum[e];
          m[r] = mNew[e];
        }
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      T *o = out + (qBase(b, h) + i0 + r) * n.dv;
      for (int64_t x = 0; x < n.dv; ++x)
        store(o + x, l[r] > 0 ? acc[r * n.dv + x] / l[r] : C(0));
      lse[qBase(b, h) + i0 + r] = l[r] > 0 ? m[r] + std::log(l[r]) : negativeInfinity<C>();
    }
  }

  /// What the backward reads besides q, k, v: dout, the forward's lse and
  /// delta_i = dot(dout_i, out_i) per query row.
  struct Grad {
    const T *dout;
    const C *lse, *delta;
  };

  /// Keys [j0, j0 + kTile) of (b, g): their dk and dv rows, each summing
  /// over the group's heads, then query rows, in order. With `dQ` (the
  /// single pass), also these keys' terms of the group's dq rows, added to
  /// dQ[((h - g · group) · Tq + i) · D] key by key in increasing order:
  /// called for (b, g)'s key tiles in increasing order, that is
  /// queryTileGrad's order, so dq gets its bits while each pair's two dot
  /// products are computed once instead of twice.
  FSDP_HD_INLINE void keyTileGrad(int64_t b, int64_t g, int64_t j0, const Grad &gr, T *dk, T *dv,
                                  C *dQ, Scratch<C> &w) const {
    const int64_t keys = std::min(kTile, n.tk - j0), group = n.heads / n.kvHeads;
    C *kw = w.ownA.data(), *vw = w.ownB.data();
    C *qw = w.rowsA.data(), *qCols = w.colsA.data(), *dow = w.rowsB.data(),
      *doCols = w.colsB.data();
    C *dK = w.accA.data(), *dV = w.accB.data(), *s = w.s.data(), *dp = w.dp.data();
    C *pr = w.wA.data(), *ds = w.wB.data(), *p = w.m.data(), *rowLse = w.l.data();
    C *rowDelta = w.l.data() + kTile;
    packRows(k + kBase(b, g) * n.d, j0, keys, n.d, kw, static_cast<C *>(nullptr));
    packRows(v + kBase(b, g) * n.dv, j0, keys, n.dv, vw, static_cast<C *>(nullptr));
    std::fill(dK, dK + keys * n.d, C(0));
    std::fill(dV, dV + keys * n.dv, C(0));
    for (int64_t h = g * group; h < (g + 1) * group; ++h) {
      const int64_t base = qBase(b, h);
      for (int64_t i0 = n.firstQuery(j0) / kTile * kTile; i0 < n.tq; i0 += kTile) {
        const int64_t rows = std::min(kTile, n.tq - i0);
        packRows(q + base * n.d, i0, rows, n.d, qw, qCols);
        packRows(gr.dout + base * n.dv, i0, rows, n.dv, dow, doCols);
        for (int64_t ii = 0; ii < rows; ++ii) {
          rowLse[ii] = gr.lse[base + i0 + ii];
          rowDelta[ii] = gr.delta[base + i0 + ii];
        }
        for (int64_t jj = 0; jj < keys; ++jj) {
          const int64_t j = j0 + jj, first = std::max<int64_t>(0, n.firstQuery(j) - i0);
          dotsAcross(kw + jj * n.d, qCols, n.d, s);
          dotsAcross(vw + jj * n.dv, doCols, n.dv, dp);
          scoresFromDots(s + first, rows - first, n.mask.offset(b, h, i0 + first, j),
                         n.mask.stride[2]);
          gradTerms(
              s + first, dp + first, [&](int64_t u) { return rowLse[first + u]; },
              [&](int64_t u) { return rowDelta[first + u]; },
              [&](int64_t u) { return dropoutFactor(n, keepScale, b, h, i0 + first + u, j); },
              rows - first, p, pr, ds);
          if (dQ)
            for (int64_t ii = 0; ii < rows; ++ii) {
              const bool kept = ii >= first && p[ii - first] != 0;
              w.keptT[ii * kTile + jj] = kept;
              w.dsT[ii * kTile + jj] = kept ? ds[ii - first] : C(0);
            }
          int64_t count = 0;
          for (int64_t ii = first; ii < rows; ++ii) {
            if (p[ii - first] == 0)
              continue;
            pr[count] = pr[ii - first];
            ds[count] = ds[ii - first];
            w.listA[count] = dow + ii * n.dv;
            w.listB[count] = qw + ii * n.d;
            ++count;
          }
          accumulateRows(dV + jj * n.dv, n.dv, pr, w.listA.data(), count);
          accumulateRows(dK + jj * n.d, n.d, ds, w.listB.data(), count);
        }
        if (dQ)
          for (int64_t ii = 0; ii < rows; ++ii) {
            int64_t used = 0;
            for (int64_t jj = 0; jj < keys; ++jj) {
              if (!w.keptT[ii * kTile + jj])
                continue;
              ds[used] = w.dsT[ii * kTile + jj];
              w.listA[used] = kw + jj * n.d;
              ++used;
            }
            accumulateRows(dQ + ((h - g * group) * n.tq + i0 + ii) * n.d, n.d, ds,
                           w.listA.data(), used);
          }
      }
    }
    for (int64_t jj = 0; jj < keys; ++jj) {
      T *dkj = dk + (kBase(b, g) + j0 + jj) * n.d, *dvj = dv + (kBase(b, g) + j0 + jj) * n.dv;
      for (int64_t x = 0; x < n.d; ++x)
        store(dkj + x, dK[jj * n.d + x] * scale);
      for (int64_t x = 0; x < n.dv; ++x)
        store(dvj + x, dV[jj * n.dv + x]);
    }
  }

  /// Query rows [i0, i0 + kTile) of (b, h): their dq rows, keys in order.
  FSDP_HD_INLINE void queryTileGrad(int64_t b, int64_t h, int64_t i0, const Grad &gr, T *dq,
                     Scratch<C> &w) const {
    const int64_t g = n.kvHead(h), rows = std::min(kTile, n.tq - i0), base = qBase(b, h);
    C *qw = w.ownA.data(), *dow = w.ownB.data();
    C *kw = w.rowsA.data(), *kCols = w.colsA.data(), *vCols = w.colsB.data();
    C *dQ = w.accA.data(), *s = w.s.data(), *dp = w.dp.data(), *ds = w.wA.data();
    C *pr = w.wB.data(), *p = w.m.data();
    packRows(q + base * n.d, i0, rows, n.d, qw, static_cast<C *>(nullptr));
    packRows(gr.dout + base * n.dv, i0, rows, n.dv, dow, static_cast<C *>(nullptr));
    std::fill(dQ, dQ + rows * n.d, C(0));
    const int64_t tileEnd = n.keyEnd(i0 + rows - 1);
    for (int64_t t0 = 0; t0 < tileEnd; t0 += kTile) {
      const int64_t keys = std::min(n.tk, t0 + kTile) - t0;
      packRows(k + kBase(b, g) * n.d, t0, keys, n.d, kw, kCols);
      packRows(v + kBase(b, g) * n.dv, t0, keys, n.dv, w.rowsB.data(), vCols);
      for (int64_t r = 0; r < rows; ++r) {
        const int64_t i = i0 + r, end = n.keyEnd(i);
        const C lseI = gr.lse[base + i], deltaI = gr.delta[base + i];
        if (t0 >= end || lseI == negativeInfinity<C>())
          continue;
        const int64_t count = std::min(end, t0 + kTile) - t0;
        dotsAcross(qw + r * n.d, kCols, n.d, s);
        dotsAcross(dow + r * n.dv, vCols, n.dv, dp);
        scoresFromDots(s, count, n.mask.offset(b, h, i, t0), n.mask.stride[3]);
        gradTerms(
            s, dp, [&](int64_t) { return lseI; }, [&](int64_t) { return deltaI; },
            [&](int64_t u) { return dropoutFactor(n, keepScale, b, h, i, t0 + u); }, count, p,
            pr, ds);
        int64_t used = 0;
        for (int64_t jj = 0; jj < count; ++jj) {
          if (p[jj] == 0)
            continue;
          ds[used] = ds[jj];
          w.listA[used] = kw + jj * n.d;
          ++used;
        }
        accumulateRows(dQ + r * n.d, n.d, ds, w.listA.data(), used);
      }
    }
    for (int64_t r = 0; r < rows; ++r) {
      T *dqi = dq + (base + i0 + r) * n.d;
      for (int64_t x = 0; x < n.d; ++x)
        store(dqi + x, dQ[r * n.d + x] * scale);
    }
  }
};

/// Tiles of kTile covering `len` rows.
inline int64_t tilesOf(int64_t len) { return (len + kTile - 1) / kTile; }

template <typename T>
Status runForward(const Kernel<T> &kern, const TensorRef &out, const TensorRef &lse) {
  using C = ComputeType<T>;
  const AttentionShape &n = kern.n;
  const int64_t tiles = tilesOf(n.tq);
  return parallelFor(0, n.batch * n.heads * tiles, 1, [&](int64_t begin, int64_t end) {
    Scratch<C> w(n);
    runWideFma([&]() __attribute__((always_inline)) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / tiles;
        kern.forwardTile(bh / n.heads, bh % n.heads, task % tiles * kTile, out.as<T>(),
                         lse.as<C>(), w);
      }
    });
  });
}

/// Whether the backward runs as one pass over (b, g) tasks instead of a
/// pass over key tiles and one over query tiles. Both give the same bits
/// (the single pass adds dq's terms in queryTileGrad's order); the single
/// pass computes each pair's two dot products once instead of twice but
/// has only B · Hkv tasks, so it is taken when those keep the rank's
/// threads evenly busy.
inline bool singlePass(int64_t groups) {
  const KernelThreads *pool = KernelThreads::current();
  const int64_t threads = pool ? pool->size() : 1;
  return groups % threads == 0 || groups >= 4 * threads;
}

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
  const int64_t keyTiles = tilesOf(n.tk), queryTiles = tilesOf(n.tq);
  const int64_t groups = n.batch * n.kvHeads, group = n.heads / n.kvHeads;
  if (singlePass(groups)) {
    // One task per (b, g): its key tiles in order, dq accumulated on the way.
    return parallelFor(0, groups, 1, [&](int64_t begin, int64_t end) {
      Scratch<C> w(n);
      std::vector<C> dQ(static_cast<size_t>(group * n.tq * n.d));
      runWideFma([&]() __attribute__((always_inline)) {
        for (int64_t bg = begin; bg < end; ++bg) {
          const int64_t b = bg / n.kvHeads, g = bg % n.kvHeads;
          std::fill(dQ.begin(), dQ.end(), C(0));
          for (int64_t t = 0; t < keyTiles; ++t)
            kern.keyTileGrad(b, g, t * kTile, grad, dk.as<T>(), dv.as<T>(), dQ.data(), w);
          T *dqGroup = dq.as<T>() + kern.qBase(b, g * group) * n.d;
          for (size_t e = 0; e < dQ.size(); ++e)
            store(dqGroup + e, dQ[e] * kern.scale);
        }
      });
    });
  }
  FSDP_RETURN_IF_ERROR(parallelFor(0, groups * keyTiles, 1, [&](int64_t begin, int64_t end) {
    Scratch<C> w(n);
    runWideFma([&]() __attribute__((always_inline)) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bg = task / keyTiles;
        kern.keyTileGrad(bg / n.kvHeads, bg % n.kvHeads, task % keyTiles * kTile, grad,
                         dk.as<T>(), dv.as<T>(), static_cast<C *>(nullptr), w);
      }
    });
  }));
  return parallelFor(0, n.batch * n.heads * queryTiles, 1, [&](int64_t begin, int64_t end) {
    Scratch<C> w(n);
    runWideFma([&]() __attribute__((always_inline)) {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / queryTiles;
        kern.queryTileGrad(bh / n.heads, bh % n.heads, task % queryTiles * kTile, grad,
                           dq.as<T>(), w);
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
        const Kernel<T> kern{shape, static_cast<C>(scale), q.as<T>(), k.as<T>(), v.as<T>(),
                             dropoutKeepScale<C>(dropout.p)};
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
        const Kernel<T> kern{shape, static_cast<C>(scale), q.as<T>(), k.as<T>(), v.as<T>(),
                             dropoutKeepScale<C>(dropout.p)};
        status = runBackward(kern, out, lse, dout, dq, dk, dv);
      },
      "attention_grad"));
  return status;
}

} // namespace fsdp::rt::cpu
