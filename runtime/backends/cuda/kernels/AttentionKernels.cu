//===- AttentionKernels.cu - flash-style attention on the GPU --------------===//
//
// nn.attention's CUDA kernels, the twin of cpu/kernels/AttentionKernels.cpp
// in the CPU kernel's per-element order, so that under the SIMT emulation
// the results are the CPU's bits (the tests require it): one thread per
// (batch, head, query row) for the forward, walking the row's keys in the
// shared tiles of kAttentionKeyTile (AttentionShape.h) with the same online
// softmax (tile maximum, rescale, sum, probabilities rounded to the
// operand type before they multiply v); one thread per (batch, kv head,
// key row) for dk and dv, summing over the group's heads, then query rows,
// in order; one thread per query row for dq, keys in order. Every dot
// product is summed from +0 in feature order with the CPU pass's operand
// order, every sum of products is an explicit fused multiply-add as the
// CPU's (multiplyAdd), no atomics, and the build contracts nothing else
// (-fmad=false), so nothing depends on the launch geometry. A block is a
// tile of 64 such rows; the rows all its threads read (keys and values
// for the forward and dq, queries and dout for dk and dv) are staged
// through shared memory kStageRows at a time, so each is read from global
// memory once per tile rather than once per thread, and a staged query's
// delta_i = dot(dout_i, out_i) is computed once per tile (the CPU's sum,
// the same bits; the backend has no scratch memory to keep it in).
// Accumulators live in each thread's local memory, so head dims are
// capped at kMaxHeadDim here. This is the correctness-first twin, proven
// under SIMT, not yet run or tuned on a real GPU (nor is the staging,
// which changes no bit: its speed is unmeasured); on one, std::log in the
// lse is the device library's (within an ulp of glibc's, as
// log-softmax's). Dropout draws each
// probability's keep bit from (seed, the device's step word, its index),
// as the dropout kernel does, in the forward and again in both backward
// kernels.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/AttentionShape.h"
#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/math/FastMath.h"

#include <cmath>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

/// The largest D and Dv a thread's local accumulators hold.
constexpr int64_t kMaxHeadDim = 256;

template <typename T> struct AttentionArgs {
  AttentionShape n;
  ComputeType<T> scale;
  const T *q, *k, *v;
  /// Dropout's keep scale, and the device's step word (read only under
  /// dropout: the stream is (seed, step), as dropout's kernel draws it).
  ComputeType<T> keepScale;
  const uint64_t *step;
};

/// Dropout's factor of probability (b, h, i, j), 1 without dropout: a
/// product with it is then exact, so the one expression gives the CPU's
/// bits with and without dropout.
template <typename C>
__device__ inline C factorOf(const AttentionShape &n, C keepScale, int64_t b, int64_t h,
                             int64_t i, int64_t j) {
  return n.dropout ? dropoutFactor(n, keepScale, b, h, i, j) : C(1);
}

/// The problem with the dropout stream of this step.
template <typename T> __device__ inline AttentionShape withStep(const AttentionArgs<T> &a) {
  AttentionShape n = a.n;
  if (n.dropout)
    n.dropKey = dropoutStreamKey(n.dropSeed, *a.step);
  return n;
}

template <typename T> __device__ inline const T *rowOf(const T *base, int64_t row, int64_t width) {
  return base + row * width;
}

/// Σ_x a[x] · b[x] from +0 in increasing x, one fused multiply-add a term.
template <typename T> __device__ inline ComputeType<T> dot(const T *a, const T *b, int64_t len) {
  ComputeType<T> acc = 0;
  for (int64_t x = 0; x < len; ++x)
    acc = multiplyAdd(load(a + x), load(b + x), acc);
  return acc;
}

/// Threads of a block: a tile of query rows (forward, dq) or key rows (dk,
/// dv), one thread each, that stage the rows they all read through shared
/// memory kStageRows at a time, so each key (or query) row is read from
/// global memory once per tile instead of once per thread.
constexpr int kTileThreads = 64;
constexpr int64_t kStageRows = 8;

/// Rows [first, first + count) of a [*, width] tensor into stage (row r at
/// r · kMaxHeadDim), the block's threads sharing the copy.
template <typename T>
__device__ inline void stageRows(const T *src, int64_t first, int64_t count, int64_t width,
                                 T *stage) {
  for (int64_t e = threadIdx.x; e < count * width; e += blockDim.x)
    stage[e / width * kMaxHeadDim + e % width] = src[(first + e / width) * width + e % width];
}

/// Blocks of kTileThreads rows covering `rows` rows of each of `groups`.
inline dim3 tileGrid(int64_t groups, int64_t rows) {
  return dim3(static_cast<unsigned>(groups * ((rows + kTileThreads - 1) / kTileThreads)));
}

/// A block's place in tileGrid(groups, rows): its group (a (b, h) or
/// (b, g)), its tile's first and last rows, and this thread's row, which
/// is past the group's rows (not `real`) in a partial last tile.
struct RowTile {
  int64_t group, first, last, row;
  bool real;
};
__device__ inline RowTile rowTile(int64_t rows) {
  const int64_t tiles = (rows + kTileThreads - 1) / kTileThreads;
  RowTile t;
  t.group = blockIdx.x / tiles;
  t.first = blockIdx.x % tiles * kTileThreads;
  t.last = (rows < t.first + kTileThreads ? rows : t.first + kTileThreads) - 1;
  t.row = t.first + threadIdx.x;
  t.real = t.row < rows;
  return t;
}

/// One thread per query row of a block's tile; the tile's keys staged.
template <typename T>
__global__ void attentionForwardKernel(AttentionArgs<T> a, T *out, ComputeType<T> *lse) {
  using C = ComputeType<T>;
  __shared__ T ks[kStageRows * kMaxHeadDim], vs[kStageRows * kMaxHeadDim];
  const AttentionShape n = withStep(a);
  const RowTile tile = rowTile(n.tq);
  const int64_t bh = tile.group, b = bh / n.heads, h = bh % n.heads, i = tile.row;
  const bool real = tile.real;
  const int64_t row = bh * n.tq + (real ? i : 0);
  const int64_t kRow0 = n.keyRow0(b, n.kvHead(h));
  const T *qi = rowOf(a.q, row, n.d);
  C acc[kMaxHeadDim], s[kAttentionKeyTile];
  for (int64_t x = 0; x < n.dv; ++x)
    acc[x] = 0;
  C m = negativeInfinity<C>(), l = 0;
  const int64_t end = real ? n.keyEnd(i) : 0, blockEnd = n.keyEnd(tile.last);
  for (int64_t t0 = 0; t0 < blockEnd; t0 += kAttentionKeyTile) {
    const int64_t tileEnd = blockEnd < t0 + kAttentionKeyTile ? blockEnd : t0 + kAttentionKeyTile;
    const int64_t count = t0 < end ? (end < tileEnd ? end : tileEnd) - t0 : 0;
    C tm = negativeInfinity<C>();
    for (int64_t c0 = 0; t0 + c0 < tileEnd; c0 += kStageRows) {
      const int64_t staged = tileEnd - t0 - c0 < kStageRows ? tileEnd - t0 - c0 : kStageRows;
      __syncthreads();
      stageRows(a.k, kRow0 + t0 + c0, staged, n.d, ks);
      __syncthreads();
      for (int64_t jj = c0; jj < c0 + staged && jj < count; ++jj) {
        s[jj] = maskedScore<T>(dot(qi, ks + (jj - c0) * kMaxHeadDim, n.d), a.scale, n.mask,
                               n.mask.offset(b, h, i, t0 + jj));
        tm = maxOf(tm, s[jj]);
      }
    }
    const C mNew = maxOf(m, tm);
    // A row past its keys, or with none seen but masked ones, changes nothing.
    const bool active = count > 0 && mNew != negativeInfinity<C>();
    const C corr = active ? expOf(m - mNew) : C(1);
    if (active)
      for (int64_t x = 0; x < n.dv; ++x)
        acc[x] *= corr;
    C sum = 0;
    for (int64_t c0 = 0; t0 + c0 < tileEnd; c0 += kStageRows) {
      const int64_t staged = tileEnd - t0 - c0 < kStageRows ? tileEnd - t0 - c0 : kStageRows;
      __syncthreads();
      stageRows(a.v, kRow0 + t0 + c0, staged, n.dv, vs);
      __syncthreads();
      for (int64_t jj = c0; active && jj < c0 + staged && jj < count; ++jj) {
        const C p = expOf(s[jj] - mNew);
        sum += p;
        const C pr = roundedProbability<T>(p) * factorOf(n, a.keepScale, b, h, i, t0 + jj);
        const T *vj = vs + (jj - c0) * kMaxHeadDim;
        for (int64_t x = 0; x < n.dv; ++x)
          acc[x] = multiplyAdd(pr, load(vj + x), acc[x]);
      }
    }
    if (active) {
      l = l * corr + sum;
      m = mNew;
    }
  }
  if (!real)
    return;
  T *o = out + row * n.dv;
  for (int64_t x = 0; x < n.dv; ++x)
    store(o + x, l > 0 ? acc[x] / l : C(0));
  lse[row] = l > 0 ? m + std::log(l) : negativeInfinity<C>();
}

/// What the backward reads besides q, k, v.
template <typename T> struct GradArgs {
  const T *out, *dout;
  const ComputeType<T> *lse;
};

/// dk and dv of key row (b, g, j): over the group's heads, then query
/// rows from the first that sees j, in order (the CPU's dk/dv pass: its
/// products are k·q and v·dout); one thread per row of a block's tile of
/// key rows, the query rows, their dout, lse and delta staged (a staged
/// row's delta = dot(dout_i, out_i) computed once, the CPU's sum).
template <typename T>
__global__ void attentionKeyGradKernel(AttentionArgs<T> a, GradArgs<T> g, T *dk, T *dv) {
  using C = ComputeType<T>;
  __shared__ T qs[kStageRows * kMaxHeadDim], dos[kStageRows * kMaxHeadDim];
  __shared__ C lses[kStageRows], deltas[kStageRows];
  const AttentionShape n = withStep(a);
  const int64_t group = n.heads / n.kvHeads;
  const RowTile tile = rowTile(n.tk);
  const int64_t bg = tile.group, b = bg / n.kvHeads, kvh = bg % n.kvHeads, j = tile.row;
  const bool real = tile.real;
  const int64_t row = bg * n.tk + (real ? j : 0);
  const T *kj = rowOf(a.k, row, n.d), *vj = rowOf(a.v, row, n.dv);
  C dkAcc[kMaxHeadDim], dvAcc[kMaxHeadDim];
  for (int64_t x = 0; x < n.d; ++x)
    dkAcc[x] = 0;
  for (int64_t x = 0; x < n.dv; ++x)
    dvAcc[x] = 0;
  const int64_t first = real ? n.firstQuery(j) : n.tq, blockFirst = n.firstQuery(tile.first);
  for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h) {
    const int64_t qRow0 = n.queryRow0(b, h);
    for (int64_t c0 = blockFirst; c0 < n.tq; c0 += kStageRows) {
      const int64_t staged = n.tq - c0 < kStageRows ? n.tq - c0 : kStageRows;
      __syncthreads();
      stageRows(a.q, qRow0 + c0, staged, n.d, qs);
      stageRows(g.dout, qRow0 + c0, staged, n.dv, dos);
      if (threadIdx.x < staged) {
        const int64_t qRow = qRow0 + c0 + threadIdx.x;
        lses[threadIdx.x] = g.lse[qRow];
        deltas[threadIdx.x] =
            dot(rowOf(g.dout, qRow, n.dv), rowOf(g.out, qRow, n.dv), n.dv);
      }
      __syncthreads();
      for (int64_t ii = 0; ii < staged; ++ii) {
        const int64_t i = c0 + ii;
        if (i < first)
          continue;
        const T *qi = qs + ii * kMaxHeadDim, *doi = dos + ii * kMaxHeadDim;
        const C p = recomputedProbability(
            maskedScore<T>(dot(kj, qi, n.d), a.scale, n.mask, n.mask.offset(b, h, i, j)),
            lses[ii]);
        if (p == 0)
          continue;
        // Dropout: dv's weight is the rounded p times its factor f, and
        // ds = p · (dp · f - delta) (the CPU's gradTerms).
        const C f = factorOf(n, a.keepScale, b, h, i, j);
        const C ds = p * (dot(vj, doi, n.dv) * f - deltas[ii]);
        const C pr = roundedProbability<T>(p) * f;
        for (int64_t x = 0; x < n.dv; ++x)
          dvAcc[x] = multiplyAdd(pr, load(doi + x), dvAcc[x]);
        for (int64_t x = 0; x < n.d; ++x)
          dkAcc[x] = multiplyAdd(ds, load(qi + x), dkAcc[x]);
      }
    }
  }
  if (!real)
    return;
  for (int64_t x = 0; x < n.d; ++x)
    store(dk + row * n.d + x, dkAcc[x] * a.scale);
  for (int64_t x = 0; x < n.dv; ++x)
    store(dv + row * n.dv + x, dvAcc[x]);
}

/// dq of query row (b, h, i): its keys in order (the CPU's dq pass: its
/// products are q·k and dout·v); one thread per row of a block's tile of
/// query rows, the keys and values staged.
template <typename T>
__global__ void attentionQueryGradKernel(AttentionArgs<T> a, GradArgs<T> g, T *dq) {
  using C = ComputeType<T>;
  __shared__ T ks[kStageRows * kMaxHeadDim], vs[kStageRows * kMaxHeadDim];
  const AttentionShape n = withStep(a);
  const RowTile tile = rowTile(n.tq);
  const int64_t bh = tile.group, b = bh / n.heads, h = bh % n.heads, i = tile.row;
  const bool real = tile.real;
  const int64_t row = bh * n.tq + (real ? i : 0);
  const int64_t kRow0 = n.keyRow0(b, n.kvHead(h));
  const T *qi = rowOf(a.q, row, n.d), *doi = rowOf(g.dout, row, n.dv);
  const C delta = real ? dot(doi, rowOf(g.out, row, n.dv), n.dv) : C(0);
  const C rowLse = g.lse[row];
  C dqAcc[kMaxHeadDim];
  for (int64_t x = 0; x < n.d; ++x)
    dqAcc[x] = 0;
  const int64_t end = real ? n.keyEnd(i) : 0, blockEnd = n.keyEnd(tile.last);
  for (int64_t j0 = 0; j0 < blockEnd; j0 += kStageRows) {
    const int64_t staged = blockEnd - j0 < kStageRows ? blockEnd - j0 : kStageRows;
    __syncthreads();
    stageRows(a.k, kRow0 + j0, staged, n.d, ks);
    stageRows(a.v, kRow0 + j0, staged, n.dv, vs);
    __syncthreads();
    for (int64_t jj = 0; jj < staged && j0 + jj < end; ++jj) {
      const int64_t j = j0 + jj;
      const T *kj = ks + jj * kMaxHeadDim;
      const C p = recomputedProbability(
          maskedScore<T>(dot(qi, kj, n.d), a.scale, n.mask, n.mask.offset(b, h, i, j)), rowLse);
      if (p == 0)
        continue;
      const C ds = p * (dot(doi, vs + jj * kMaxHeadDim, n.dv) *
                            factorOf(n, a.keepScale, b, h, i, j) -
                        delta);
      for (int64_t x = 0; x < n.d; ++x)
        dqAcc[x] = multiplyAdd(ds, load(kj + x), dqAcc[x]);
    }
  }
  if (!real)
    return;
  for (int64_t x = 0; x < n.d; ++x)
    store(dq + row * n.d + x, dqAcc[x] * a.scale);
}

Status checkHeadDims(const char *op, const AttentionShape &n) {
  if (n.d > kMaxHeadDim || n.dv > kMaxHeadDim)
    return Status::error(cat(op, ": head dims above ", kMaxHeadDim,
                             " are not supported on the CUDA backend"));
  return Status::ok();
}

} // namespace

/// The kernels' arguments for operands of type T.
template <typename T>
AttentionArgs<T> argsOf(const KernelContext &ctx, const AttentionShape &shape, float scale,
                        const AttentionDropout &dropout, const TensorRef &q, const TensorRef &k,
                        const TensorRef &v) {
  using C = ComputeType<T>;
  return {shape,           static_cast<C>(scale), q.as<const T>(), k.as<const T>(),
          v.as<const T>(), dropoutKeepScale<C>(dropout.p), ctx.step};
}

/// The dropout's checks, and the step word it needs.
Status checkDropout(const KernelContext &ctx, const char *op, const AttentionDropout &dropout,
                    AttentionShape &shape) {
  FSDP_RETURN_IF_ERROR(attentionDropout(op, dropout, shape));
  if (shape.dropout && !ctx.step)
    return Status::error(cat(op, ": the device provides no step word for dropout"));
  return Status::ok();
}

Status attention(const KernelContext &ctx, const TensorRef &q, const TensorRef &k,
                 const TensorRef &v, const TensorRef *mask, bool causal, float scale,
                 const AttentionDropout &dropout, const TensorRef &out, const TensorRef &lse) {
  AttentionShape shape;
  FSDP_RETURN_IF_ERROR(attentionShape(q, k, v, mask, causal, out, lse, shape));
  FSDP_RETURN_IF_ERROR(checkDropout(ctx, "attention", dropout, shape));
  FSDP_RETURN_IF_ERROR(checkHeadDims("attention", shape));
  return dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        const AttentionArgs<T> args = argsOf<T>(ctx, shape, scale, dropout, q, k, v);
        if (shape.batch * shape.heads * shape.tq == 0)
          return Status::ok();
        return launch(ctx, "attention", attentionForwardKernel<T>,
                      tileGrid(shape.batch * shape.heads, shape.tq), dim3(kTileThreads), args,
                      out.as<T>(), lse.as<C>());
      },
      "attention");
}

Status attentionGrad(const KernelContext &ctx, const TensorRef &q, const TensorRef &k,
                     const TensorRef &v, const TensorRef *mask, const TensorRef &out,
                     const TensorRef &lse, const TensorRef &dout, bool causal, float scale,
                     const AttentionDropout &dropout, const TensorRef &dq, const TensorRef &dk,
                     const TensorRef &dv) {
  AttentionShape shape;
  FSDP_RETURN_IF_ERROR(
      attentionGradShape(q, k, v, mask, out, lse, dout, causal, dq, dk, dv, shape));
  FSDP_RETURN_IF_ERROR(checkDropout(ctx, "attention_grad", dropout, shape));
  FSDP_RETURN_IF_ERROR(checkHeadDims("attention_grad", shape));
  return dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        const AttentionArgs<T> args = argsOf<T>(ctx, shape, scale, dropout, q, k, v);
        const GradArgs<T> grad{out.as<const T>(), dout.as<const T>(), lse.as<const C>()};
        if (shape.batch * shape.kvHeads * shape.tk > 0)
          FSDP_RETURN_IF_ERROR(launch(ctx, "attention_grad", attentionKeyGradKernel<T>,
                                      tileGrid(shape.batch * shape.kvHeads, shape.tk),
                                      dim3(kTileThreads), args, grad, dk.as<T>(), dv.as<T>()));
        if (shape.batch * shape.heads * shape.tq == 0)
          return Status::ok();
        return launch(ctx, "attention_grad", attentionQueryGradKernel<T>,
                      tileGrid(shape.batch * shape.heads, shape.tq), dim3(kTileThreads), args,
                      grad, dq.as<T>());
      },
      "attention_grad");
}

FSDP_CUDA_NAMESPACE_END
