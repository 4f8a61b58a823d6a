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
// (-fmad=false), so nothing depends on the launch geometry. The CUDA backend has no scratch
// memory, so each dk/dv thread recomputes delta_i = dot(dout_i, out_i) where
// it needs it (the CPU's sum, the same bits). Accumulators live in each
// thread's local memory, so head dims are capped at kMaxHeadDim here. This
// is the correctness-first twin, proven under SIMT, not yet run or tuned
// on a real GPU; on one, std::log in the lse is the device library's
// (within an ulp of glibc's, as log-softmax's). Dropout draws each
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

template <typename T>
__global__ void attentionForwardKernel(AttentionArgs<T> a, T *out, ComputeType<T> *lse) {
  using C = ComputeType<T>;
  const AttentionShape n = withStep(a);
  FSDP_GRID_STRIDE(row, n.batch * n.heads * n.tq) {
    const int64_t i = row % n.tq, bh = row / n.tq, b = bh / n.heads, h = bh % n.heads;
    const int64_t kRow0 = (b * n.kvHeads + n.kvHead(h)) * n.tk;
    const T *qi = rowOf(a.q, row, n.d);
    C acc[kMaxHeadDim], s[kAttentionKeyTile];
    for (int64_t x = 0; x < n.dv; ++x)
      acc[x] = 0;
    C m = negativeInfinity<C>(), l = 0;
    const int64_t end = n.keyEnd(i);
    for (int64_t t0 = 0; t0 < end; t0 += kAttentionKeyTile) {
      const int64_t count = (end < t0 + kAttentionKeyTile ? end : t0 + kAttentionKeyTile) - t0;
      C tm = negativeInfinity<C>();
      for (int64_t jj = 0; jj < count; ++jj) {
        s[jj] = maskedScore<T>(dot(qi, rowOf(a.k, kRow0 + t0 + jj, n.d), n.d), a.scale, n.mask,
                               n.mask.offset(b, h, i, t0 + jj));
        tm = maxOf(tm, s[jj]);
      }
      const C mNew = maxOf(m, tm);
      if (mNew == negativeInfinity<C>())
        continue;
      const C corr = expOf(m - mNew);
      for (int64_t x = 0; x < n.dv; ++x)
        acc[x] *= corr;
      C sum = 0;
      for (int64_t jj = 0; jj < count; ++jj) {
        const C p = expOf(s[jj] - mNew);
        sum += p;
        const C pr = roundedProbability<T>(p) * factorOf(n, a.keepScale, b, h, i, t0 + jj);
        const T *vj = rowOf(a.v, kRow0 + t0 + jj, n.dv);
        for (int64_t x = 0; x < n.dv; ++x)
          acc[x] = multiplyAdd(pr, load(vj + x), acc[x]);
      }
      l = l * corr + sum;
      m = mNew;
    }
    T *o = out + row * n.dv;
    for (int64_t x = 0; x < n.dv; ++x)
      store(o + x, l > 0 ? acc[x] / l : C(0));
    lse[row] = l > 0 ? m + std::log(l) : negativeInfinity<C>();
  }
}

/// What the backward reads besides q, k, v.
template <typename T> struct GradArgs {
  const T *out, *dout;
  const ComputeType<T> *lse;
};

/// dk and dv of key row (b, g, j): over the group's heads, then query
/// rows from the first that sees j, in order (the CPU's dk/dv pass: its
/// products are k·q and v·dout).
template <typename T>
__global__ void attentionKeyGradKernel(AttentionArgs<T> a, GradArgs<T> g, T *dk, T *dv) {
  using C = ComputeType<T>;
  const AttentionShape n = withStep(a);
  const int64_t group = n.heads / n.kvHeads;
  FSDP_GRID_STRIDE(row, n.batch * n.kvHeads * n.tk) {
    const int64_t j = row % n.tk, bg = row / n.tk, b = bg / n.kvHeads, kvh = bg % n.kvHeads;
    const T *kj = rowOf(a.k, row, n.d), *vj = rowOf(a.v, row, n.dv);
    C dkAcc[kMaxHeadDim], dvAcc[kMaxHeadDim];
    for (int64_t x = 0; x < n.d; ++x)
      dkAcc[x] = 0;
    for (int64_t x = 0; x < n.dv; ++x)
      dvAcc[x] = 0;
    for (int64_t h = kvh * group; h < (kvh + 1) * group; ++h)
      for (int64_t i = n.firstQuery(j); i < n.tq; ++i) {
        const int64_t qRow = (b * n.heads + h) * n.tq + i;
        const T *qi = rowOf(a.q, qRow, n.d), *doi = rowOf(g.dout, qRow, n.dv);
        const C p = recomputedProbability(
            maskedScore<T>(dot(kj, qi, n.d), a.scale, n.mask, n.mask.offset(b, h, i, j)),
            g.lse[qRow]);
        if (p == 0)
          continue;
        const C delta = dot(doi, rowOf(g.out, qRow, n.dv), n.dv);
        // Dropout: dv's weight is the rounded p times its factor f, and
        // ds = p · (dp · f - delta) (the CPU's gradTerms).
        const C f = factorOf(n, a.keepScale, b, h, i, j);
        const C ds = p * (dot(vj, doi, n.dv) * f - delta);
        const C pr = roundedProbability<T>(p) * f;
        for (int64_t x = 0; x < n.dv; ++x)
          dvAcc[x] = multiplyAdd(pr, load(doi + x), dvAcc[x]);
        for (int64_t x = 0; x < n.d; ++x)
          dkAcc[x] = multiplyAdd(ds, load(qi + x), dkAcc[x]);
      }
    for (int64_t x = 0; x < n.d; ++x)
      store(dk + row * n.d + x, dkAcc[x] * a.scale);
    for (int64_t x = 0; x < n.dv; ++x)
      store(dv + row * n.dv + x, dvAcc[x]);
  }
}

/// dq of query row (b, h, i): its keys in order (the CPU's dq pass: its
/// products are q·k and dout·v).
template <typename T>
__global__ void attentionQueryGradKernel(AttentionArgs<T> a, GradArgs<T> g, T *dq) {
  using C = ComputeType<T>;
  const AttentionShape n = withStep(a);
  FSDP_GRID_STRIDE(row, n.batch * n.heads * n.tq) {
    const int64_t i = row % n.tq, bh = row / n.tq, b = bh / n.heads, h = bh % n.heads;
    const int64_t kRow0 = (b * n.kvHeads + n.kvHead(h)) * n.tk;
    const T *qi = rowOf(a.q, row, n.d), *doi = rowOf(g.dout, row, n.dv);
    const C delta = dot(doi, rowOf(g.out, row, n.dv), n.dv), rowLse = g.lse[row];
    C dqAcc[kMaxHeadDim];
    for (int64_t x = 0; x < n.d; ++x)
      dqAcc[x] = 0;
    for (int64_t j = 0; j < n.keyEnd(i); ++j) {
      const T *kj = rowOf(a.k, kRow0 + j, n.d);
      const C p = recomputedProbability(
          maskedScore<T>(dot(qi, kj, n.d), a.scale, n.mask, n.mask.offset(b, h, i, j)), rowLse);
      if (p == 0)
        continue;
      const C ds = p * (dot(doi, rowOf(a.v, kRow0 + j, n.dv), n.dv) *
                            factorOf(n, a.keepScale, b, h, i, j) -
                        delta);
      for (int64_t x = 0; x < n.d; ++x)
        dqAcc[x] = multiplyAdd(ds, load(kj + x), dqAcc[x]);
    }
    for (int64_t x = 0; x < n.d; ++x)
      store(dq + row * n.d + x, dqAcc[x] * a.scale);
  }
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
        return launchElementwise(ctx, "attention", shape.batch * shape.heads * shape.tq,
                                 attentionForwardKernel<T>, args, out.as<T>(), lse.as<C>());
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
        FSDP_RETURN_IF_ERROR(launchElementwise(ctx, "attention_grad",
                                               shape.batch * shape.kvHeads * shape.tk,
                                               attentionKeyGradKernel<T>, args, grad, dk.as<T>(),
                                               dv.as<T>()));
        return launchElementwise(ctx, "attention_grad", shape.batch * shape.heads * shape.tq,
                                 attentionQueryGradKernel<T>, args, grad, dq.as<T>());
      },
      "attention_grad");
}

FSDP_CUDA_NAMESPACE_END
