//===- AttentionGemms.cpp - 16-bit attention by oneDNN block products -----===//
//
// AttentionGemms.h's route. The forward takes a 64-query tile at a time and
// walks its keys in spans of kSpan: one product gives the span's key-major
// scores (Sᵀ = K Qᵀ, as the exact kernels lay them out, so the same
// element passes of AttentionBlocks.h mask them and form the online
// softmax), and one more adds the span's rounded probabilities times v to
// the tile's f32 accumulators. The backward takes blocks of a 64-key tile
// and a span of queries on a fixed grid (span s covers queries
// [s·kSpan, (s+1)·kSpan), clipped to those that see the tile): two products
// give the scores and dout·v, AttentionBlocks.h's gradRow gives p and ds,
// rounded to T, and three products add p·dout to dv, ds·q to dk and dsᵀ·k
// to dq. Like the exact kernels it runs as one task per (batch, kv head)
// when those keep the threads busy and as a key-tile pass plus a query-span
// pass otherwise; both issue the same products in the same order for
// every result element, so the bits do not depend on the thread count.
// Why spans of kSpan and not 64: a oneDNN matmul costs about a microsecond
// to start, as much as a 64³ product itself.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/kernels/AttentionGemms.h"

#include "runtime/backends/cpu/GemmLibrary.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/OneDnnMatmul.h"
#include "runtime/backends/cpu/kernels/AttentionBlocks.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

using namespace attentionblock;

/// Keys of a forward span and queries of a backward one (a multiple of
/// kTile; part of the bits).
constexpr int64_t kSpan = 512;

/// f32 out (+)= op(a) op(b) of 16-bit operands, oneDNN's primitive or,
/// should oneDNN refuse one shape of a route it took, a plain loop.
template <typename T>
void product(const StridedProduct &s, const T *a, const T *b, float *out, bool accumulate) {
  if (oneDnnStridedProduct(s, dtypeOf<T>(), a, b, out, accumulate))
    return;
  for (int64_t i = 0; i < s.m; ++i)
    for (int64_t j = 0; j < s.n; ++j) {
      float acc = 0;
      for (int64_t x = 0; x < s.k; ++x)
        acc += load(a + (s.transA ? x * s.lda + i : i * s.lda + x)) *
               load(b + (s.transB ? j * s.ldb + x : x * s.ldb + j));
      out[i * s.ldc + j] = accumulate ? out[i * s.ldc + j] + acc : acc;
    }
}

/// rows × cols f32 values (ld ld) rounded to T, row-major (ld ld).
template <typename T>
void rounded(const float *src, int64_t rows, int64_t cols, int64_t ld, T *dst) {
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t c = 0; c < cols; ++c)
      dst[r * ld + c] = fromCompute<T>(src[r * ld + c]);
}

template <typename T> struct Gemms {
  const AttentionShape &n;
  float scale;
  const T *q, *k, *v;

  struct ForwardScratch {
    std::vector<float> s, p, acc;
    std::vector<T> pr;
    float m[kTile], l[kTile], tm[kTile], mNew[kTile], sum[kTile];
    Flag active[kTile];
    explicit ForwardScratch(int64_t dv)
        : s(kSpan * kTile), p(kSpan * kTile), acc(kTile * std::max<int64_t>(dv, 1)),
          pr(kSpan * kTile) {}
  };

  /// Query rows [i0, i0 + kTile) of (b, h): their out rows and lse.
  void forwardTile(int64_t b, int64_t h, int64_t i0, T *out, float *lse,
                   ForwardScratch &w) const {
    const int64_t rows = std::min(kTile, n.tq - i0), g = n.kvHead(h);
    const T *qt = q + (n.queryRow0(b, h) + i0) * n.d;
    float *st = w.s.data(), *pt = w.p.data(), *acc = w.acc.data();
    std::fill(w.acc.begin(), w.acc.end(), 0.0f);
    for (int64_t ii = 0; ii < kTile; ++ii) {
      w.m[ii] = negativeInfinity<float>();
      w.l[ii] = 0;
    }
    const int64_t tileEnd = n.keyEnd(i0 + rows - 1);
    for (int64_t t0 = 0; t0 < tileEnd; t0 += kSpan) {
      const int64_t keys = std::min(tileEnd, t0 + kSpan) - t0;
      const T *kt = k + (n.keyRow0(b, g) + t0) * n.d, *vt = v + (n.keyRow0(b, g) + t0) * n.dv;
      // Sᵀ: keys × rows, ld kTile.
      product(StridedProduct{keys, rows, n.d, n.d, n.d, kTile, false, true}, kt, qt, st, false);
      for (int64_t ii = 0; ii < kTile; ++ii)
        w.tm[ii] = negativeInfinity<float>();
      for (int64_t jj = 0; jj < keys; ++jj) {
        const int64_t j = t0 + jj;
        scoreRow<T, true>(st + jj * kTile, w.tm, firstSeeing(n, j, true, i0), rows, scale, n.mask,
                          n.mask.offset(b, h, i0, j), n.mask.stride[2]);
      }
      float corr[kTile];
      for (int64_t ii = 0; ii < kTile; ++ii) {
        const int64_t count =
            ii < rows ? std::min(keys, std::max<int64_t>(0, n.keyEnd(i0 + ii) - t0)) : 0;
        w.mNew[ii] = maxOf(w.m[ii], w.tm[ii]);
        w.active[ii] = count > 0 && w.mNew[ii] != negativeInfinity<float>();
        corr[ii] = w.active[ii] ? expOf(w.m[ii] - w.mNew[ii]) : 1.0f;
        w.sum[ii] = 0;
      }
      for (int64_t jj = 0; jj < keys; ++jj)
        probabilityRow<T>(st + jj * kTile, w.mNew, w.active, w.sum, pt + jj * kTile);
      rounded(pt, keys, kTile, kTile, w.pr.data());
      for (int64_t ii = 0; ii < rows; ++ii) {
        if (!w.active[ii])
          continue;
        for (int64_t x = 0; x < n.dv; ++x)
          acc[ii * n.dv + x] *= corr[ii];
        w.l[ii] = w.l[ii] * corr[ii] + w.sum[ii];
        w.m[ii] = w.mNew[ii];
      }
      // acc (rows × dv) += P (Pᵀ stored keys × kTile) · V.
      product(StridedProduct{rows, n.dv, keys, kTile, n.dv, n.dv, true, false}, w.pr.data(), vt,
              acc, true);
    }
    for (int64_t r = 0; r < rows; ++r) {
      T *o = out + (n.queryRow0(b, h) + i0 + r) * n.dv;
      for (int64_t x = 0; x < n.dv; ++x)
        store(o + x, w.l[r] > 0 ? acc[r * n.dv + x] / w.l[r] : 0.0f);
      lse[n.queryRow0(b, h) + i0 + r] =
          w.l[r] > 0 ? w.m[r] + std::log(w.l[r]) : negativeInfinity<float>();
    }
  }
};

/// The backward's operands and results, and its blocks.
template <typename T> struct GemmBackward {
  const Gemms<T> &f;
  const T *dout;
  /// Every (b, h)'s lse and delta, rows padded with -inf and 0 to whole
  /// 64-row groups (paddedRows each), so a block's element passes read
  /// kTile of them past any span's end.
  const float *lse, *delta;
  int64_t paddedRows;
  T *dq, *dk, *dv;

  const AttentionShape &n() const { return f.n; }

  struct Scratch {
    std::vector<float> s, dp, p, dK, dV, dQ;
    std::vector<T> pr, ds;
    std::vector<Flag> kept;
    Scratch() : s(kTile * kSpan), dp(kTile * kSpan), p(kTile * kSpan), pr(kTile * kSpan),
                ds(kTile * kSpan), kept(kTile * kSpan) {}
  };

  /// The queries of span s that see key tile t0: [first, end).
  std::pair<int64_t, int64_t> spanFor(int64_t s, int64_t t0) const {
    const int64_t tileFirst = n().firstQuery(t0) / kTile * kTile;
    return {std::max(s * kSpan, tileFirst), std::min((s + 1) * kSpan, n().tq)};
  }
  int64_t spans() const { return (n().tq + kSpan - 1) / kSpan; }

  /// Key tile [t0, t0 + keys) × queries [i0, i1) of (b, h): dv and dk rows
  /// += (dK, dV: the tile's accumulators, ld d and dv) and dq rows +=
  /// (dQ: query i0's accumulator row, ld d), where not null.
  void block(int64_t b, int64_t h, int64_t t0, int64_t keys, int64_t i0, int64_t i1, float *dK,
             float *dV, float *dQ, Scratch &w) const {
    const AttentionShape &s = n();
    const int64_t g = s.kvHead(h), qs = i1 - i0;
    const int64_t kRow = s.keyRow0(b, g) + t0, qRow = s.queryRow0(b, h) + i0;
    const T *kt = f.k + kRow * s.d, *vt = f.v + kRow * s.dv;
    const T *qt = f.q + qRow * s.d, *dot = dout + qRow * s.dv;
    float *st = w.s.data(), *dpt = w.dp.data(), *pt = w.p.data();
    const int64_t padded = (b * s.heads + h) * paddedRows + i0; // lse and delta of query i0
    product(StridedProduct{keys, qs, s.d, s.d, s.d, kSpan, false, true}, kt, qt, st, false);
    product(StridedProduct{keys, qs, s.dv, s.dv, s.dv, kSpan, false, true}, vt, dot, dpt, false);
    for (int64_t jj = 0; jj < keys; ++jj) {
      const int64_t j = t0 + jj, row = jj * kSpan;
      for (int64_t c0 = 0; c0 < qs; c0 += kTile) {
        const int64_t rows = std::min(kTile, qs - c0);
        scoreRow<T, false>(st + row + c0, static_cast<float *>(nullptr),
                           firstSeeing(s, j, true, i0 + c0), rows, f.scale, s.mask,
                           s.mask.offset(b, h, i0 + c0, j), s.mask.stride[2]);
        (void)gradRow<T>(st + row + c0, dpt + row + c0, pt + row + c0, w.kept.data() + row + c0,
                         lse + padded + c0, delta + padded + c0, rows);
      }
    }
    rounded(pt, keys, qs, kSpan, w.pr.data());
    rounded(dpt, keys, qs, kSpan, w.ds.data());
    if (dK) {
      product(StridedProduct{keys, s.dv, qs, kSpan, s.dv, s.dv, false, false}, w.pr.data(), dot,
              dV, true);
      product(StridedProduct{keys, s.d, qs, kSpan, s.d, s.d, false, false}, w.ds.data(), qt, dK,
              true);
    }
    if (dQ)
      product(StridedProduct{qs, s.d, keys, kSpan, s.d, s.d, true, false}, w.ds.data(), kt, dQ,
              true);
  }

  void storeRows(const float *acc, int64_t rows, int64_t width, float by, T *dst) const {
    for (int64_t i = 0; i < rows * width; ++i)
      store(dst + i, acc[i] * by);
  }

  /// (b, g)'s whole backward: each head's key tiles, then spans, in order.
  void group(int64_t b, int64_t g, Scratch &w) const {
    const AttentionShape &s = n();
    const int64_t heads = s.heads / s.kvHeads;
    w.dK.assign(s.tk * s.d, 0.0f);
    w.dV.assign(s.tk * s.dv, 0.0f);
    for (int64_t h = g * heads; h < (g + 1) * heads; ++h) {
      w.dQ.assign(s.tq * s.d, 0.0f);
      for (int64_t t0 = 0; t0 < s.tk; t0 += kTile) {
        const int64_t keys = std::min(kTile, s.tk - t0);
        for (int64_t sp = 0; sp < spans(); ++sp) {
          const auto [i0, i1] = spanFor(sp, t0);
          if (i0 < i1)
            block(b, h, t0, keys, i0, i1, w.dK.data() + t0 * s.d, w.dV.data() + t0 * s.dv,
                  w.dQ.data() + i0 * s.d, w);
        }
      }
      storeRows(w.dQ.data(), s.tq, s.d, f.scale, dq + f.n.queryRow0(b, h) * s.d);
    }
    storeRows(w.dK.data(), s.tk, s.d, f.scale, dk + f.n.keyRow0(b, g) * s.d);
    storeRows(w.dV.data(), s.tk, s.dv, 1.0f, dv + f.n.keyRow0(b, g) * s.dv);
  }

  /// Key tile t0 of (b, g): its dk and dv rows over the heads, then spans.
  void keyTile(int64_t b, int64_t g, int64_t t0, Scratch &w) const {
    const AttentionShape &s = n();
    const int64_t heads = s.heads / s.kvHeads, keys = std::min(kTile, s.tk - t0);
    w.dK.assign(keys * s.d, 0.0f);
    w.dV.assign(keys * s.dv, 0.0f);
    for (int64_t h = g * heads; h < (g + 1) * heads; ++h) {
      for (int64_t sp = 0; sp < spans(); ++sp) {
        const auto [i0, i1] = spanFor(sp, t0);
        if (i0 < i1)
          block(b, h, t0, keys, i0, i1, w.dK.data(), w.dV.data(), nullptr, w);
      }
    }
    storeRows(w.dK.data(), keys, s.d, f.scale, dk + (f.n.keyRow0(b, g) + t0) * s.d);
    storeRows(w.dV.data(), keys, s.dv, 1.0f, dv + (f.n.keyRow0(b, g) + t0) * s.dv);
  }

  /// Span sp of (b, h): its dq rows over the key tiles in order.
  void querySpan(int64_t b, int64_t h, int64_t sp, Scratch &w) const {
    const AttentionShape &s = n();
    const int64_t first = sp * kSpan, end = std::min(first + kSpan, s.tq);
    w.dQ.assign((end - first) * s.d, 0.0f);
    for (int64_t t0 = 0; t0 < s.keyEnd(end - 1); t0 += kTile) {
      const auto [i0, i1] = spanFor(sp, t0);
      if (i0 < i1)
        block(b, h, t0, std::min(kTile, s.tk - t0), i0, i1, nullptr, nullptr,
              w.dQ.data() + (i0 - first) * s.d, w);
    }
    storeRows(w.dQ.data(), end - first, s.d, f.scale, dq + (f.n.queryRow0(b, h) + first) * s.d);
  }
};

} // namespace

Status attentionTakesGemms(DType dtype, const AttentionShape &n, bool &gemms) {
  GemmRoute route;
  FSDP_RETURN_IF_ERROR(gemmRoute(route));
  gemms = (dtype == DType::BF16 || dtype == DType::F16) && route == GemmRoute::OneDnn &&
          !n.dropout && oneDnnTakes(dtype);
  return Status::ok();
}

template <typename T>
Status attentionByGemms(const AttentionShape &n, float scale, const T *q, const T *k, const T *v,
                        T *out, float *lse) {
  const Gemms<T> f{n, scale, q, k, v};
  const int64_t tiles = tilesOf(n.tq);
  return parallelFor(0, n.batch * n.heads * tiles, 1, [&](int64_t begin, int64_t end) {
    typename Gemms<T>::ForwardScratch w(n.dv);
    runWideFma([&] {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / tiles;
        f.forwardTile(bh / n.heads, bh % n.heads, task % tiles * kTile, out, lse, w);
      }
    });
  });
}

template <typename T>
Status attentionGradByGemms(const AttentionShape &n, float scale, const T *q, const T *k,
                            const T *v, const T *out, const float *lse, const T *dout, T *dq,
                            T *dk, T *dv) {
  std::vector<float> delta;
  FSDP_RETURN_IF_ERROR(rowDeltas(n, dout, out, delta));
  // lse and delta padded per (b, h) once, read by every block.
  const int64_t padded = roundUp(n.tq, kTile), heads = n.batch * n.heads;
  std::vector<float> lsePadded(heads * padded, negativeInfinity<float>());
  std::vector<float> deltaPadded(heads * padded, 0.0f);
  for (int64_t bh = 0; bh < heads; ++bh) {
    std::copy(lse + bh * n.tq, lse + (bh + 1) * n.tq, lsePadded.begin() + bh * padded);
    std::copy(delta.begin() + bh * n.tq, delta.begin() + (bh + 1) * n.tq,
              deltaPadded.begin() + bh * padded);
  }
  const Gemms<T> f{n, scale, q, k, v};
  const GemmBackward<T> pass{f, dout, lsePadded.data(), deltaPadded.data(), padded, dq, dk, dv};
  using Scratch = typename GemmBackward<T>::Scratch;
  const int64_t groups = n.batch * n.kvHeads, keyTiles = tilesOf(n.tk);
  if (singlePass(groups))
    return parallelFor(0, groups, 1, [&](int64_t begin, int64_t end) {
      Scratch w;
      runWideFma([&] {
        for (int64_t bg = begin; bg < end; ++bg)
          pass.group(bg / n.kvHeads, bg % n.kvHeads, w);
      });
    });
  FSDP_RETURN_IF_ERROR(parallelFor(0, groups * keyTiles, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    runWideFma([&] {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bg = task / keyTiles;
        pass.keyTile(bg / n.kvHeads, bg % n.kvHeads, task % keyTiles * kTile, w);
      }
    });
  }));
  const int64_t spans = pass.spans();
  return parallelFor(0, n.batch * n.heads * spans, 1, [&](int64_t begin, int64_t end) {
    Scratch w;
    runWideFma([&] {
      for (int64_t task = begin; task < end; ++task) {
        const int64_t bh = task / spans;
        pass.querySpan(bh / n.heads, bh % n.heads, task % spans, w);
      }
    });
  });
}

#define FSDP_ATTENTION_GEMMS(T)                                                                  \
  template Status attentionByGemms<T>(const AttentionShape &, float, const T *, const T *,       \
                                      const T *, T *, float *);                                  \
  template Status attentionGradByGemms<T>(const AttentionShape &, float, const T *, const T *,   \
                                          const T *, const T *, const float *, const T *, T *,   \
                                          T *, T *);
FSDP_ATTENTION_GEMMS(BF16)
FSDP_ATTENTION_GEMMS(F16)
#undef FSDP_ATTENTION_GEMMS

} // namespace fsdp::rt::cpu
