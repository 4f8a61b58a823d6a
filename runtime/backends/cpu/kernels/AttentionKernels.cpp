//===- AttentionKernels.cpp - flash-style scaled dot-product attention ----===//
//
// nn.attention's kernels (Kernels.def's Attention and AttentionGrad rows):
// softmax(q kᵀ · scale + mask) v without the B·H·Tq·Tk scores. The forward
// walks each query row's keys in tiles of kKeyTile with an online softmax
// (running max and sum, the accumulated output rescaled when the max
// grows) and saves only the output and the row's log-sum-exp; the
// backward recomputes each probability from the log-sum-exp, in one pass
// over key rows for dk and dv and one over query rows for dq, so every
// result element is written by one task in a fixed order: no atomics, and
// the bits do not depend on the thread count. Compute is in f32 (f64 for
// f64), 16-bit operands widened exactly; as torch's CPU flash kernel does,
// the probabilities that multiply the values are rounded to the operand
// dtype first. A row whose every key is masked gives zeros and lse -inf,
// as torch >= 2.5 (its "safe" softmax; checked with torch 2.15: math and
// flash backends both give 0).
//
// This first version is correctness-first: plain loops, threaded over
// (batch, head) rows. Vectorizing the dot products across a tile's keys
// and a CUDA twin in the same order are issue 32's next steps.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"

#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"

#include <cmath>
#include <limits>
#include <vector>

namespace fsdp::rt::cpu {
namespace {

/// Keys per online-softmax step: the tile boundaries set where the running
/// output is rescaled, so they are part of the result's bits.
constexpr int64_t kKeyTile = 64;

struct Dims {
  int64_t batch, heads, kvHeads, tq, tk, d, dv;
};

/// The mask read through broadcast strides over [B, H, Tq, Tk].
struct MaskView {
  const void *data = nullptr;
  DType dtype = DType::Bool;
  int64_t stride[4] = {};
};

Status checkOperands(const char *name, const TensorRef &q, const TensorRef &k, const TensorRef &v,
                     const TensorRef *mask, const TensorRef &lse, Dims &dims, MaskView &view) {
  if (q.rank != 4 || k.rank != 4 || v.rank != 4)
    return Status::error(cat(name, ": query, key and value must have rank 4"));
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return Status::error(cat(name, ": query, key and value must share one element type"));
  dims = {q.dims[0], q.dims[1], k.dims[1], q.dims[2], k.dims[2], q.dims[3], v.dims[3]};
  if (k.dims[0] != dims.batch || v.dims[0] != dims.batch || v.dims[1] != dims.kvHeads ||
      v.dims[2] != dims.tk || k.dims[3] != dims.d)
    return Status::error(cat(name, ": key and value shapes do not match the query's"));
  if (dims.kvHeads <= 0 || dims.heads % dims.kvHeads != 0)
    return Status::error(cat(name, ": query heads must be a multiple of key heads"));
  const DType lseType = q.dtype == DType::F64 ? DType::F64 : DType::F32;
  if (lse.dtype != lseType || lse.rank != 3 || lse.dims[0] != dims.batch ||
      lse.dims[1] != dims.heads || lse.dims[2] != dims.tq)
    return Status::error(cat(name, ": lse must be [B, H, Tq] in ", dtypeName(lseType)));
  if (!mask)
    return Status::ok();
  if (mask->dtype != DType::Bool && mask->dtype != q.dtype && mask->dtype != DType::F32)
    return Status::error(cat(name, ": mask must be bool, f32 or the operands' type"));
  const int64_t scores[4] = {dims.batch, dims.heads, dims.tq, dims.tk};
  if (mask->rank > 4)
    return Status::error(cat(name, ": mask has rank above 4"));
  int64_t stride = 1;
  for (int i = mask->rank - 1; i >= 0; --i) {
    const int axis = 4 - mask->rank + i;
    if (mask->dims[i] != 1 && mask->dims[i] != scores[axis])
      return Status::error(cat(name, ": mask does not broadcast to the scores"));
    view.stride[axis] = mask->dims[i] == 1 ? 0 : stride;
    stride *= mask->dims[i];
  }
  view.data = mask->data;
  view.dtype = mask->dtype;
  return Status::ok();
}

/// One (batch, head) pair's view of the operands.
template <typename T> struct Head {
  const T *q, *k, *v;
  int64_t b, h;
};

/// The masked, scaled score of query i and key j (C -inf where masked).
template <typename T, typename C>
C score(const T *qi, const T *kj, int64_t d, C scale, const MaskView &mask, int64_t maskOffset) {
  C acc = 0;
  for (int64_t x = 0; x < d; ++x)
    acc += load(qi + x) * load(kj + x);
  C s = acc * scale;
  if (!mask.data)
    return s;
  switch (mask.dtype) {
  case DType::Bool:
    return static_cast<const uint8_t *>(mask.data)[maskOffset] ? s
                                                               : -std::numeric_limits<C>::infinity();
  case DType::F32: return s + static_cast<C>(static_cast<const float *>(mask.data)[maskOffset]);
  default: return s + load(static_cast<const T *>(mask.data) + maskOffset);
  }
}

/// The probability as the P·V product uses it: rounded to T for 16-bit T.
template <typename T, typename C> C rounded(C p) {
  const T r = fromCompute<T>(p);
  return load(&r);
}

template <typename T> struct Kernel {
  using C = ComputeType<T>;
  Dims n;
  MaskView mask;
  C scale;
  bool causal;

  int64_t keyEnd(int64_t i) const { return causal ? std::min(n.tk, i + 1) : n.tk; }
  int64_t maskOffset(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return b * mask.stride[0] + h * mask.stride[1] + i * mask.stride[2] + j * mask.stride[3];
  }
  const T *qRow(const T *q, int64_t b, int64_t h, int64_t i) const {
    return q + ((b * n.heads + h) * n.tq + i) * n.d;
  }
  const T *kRow(const T *k, int64_t b, int64_t g, int64_t j) const {
    return k + ((b * n.kvHeads + g) * n.tk + j) * n.d;
  }
  const T *vRow(const T *v, int64_t b, int64_t g, int64_t j) const {
    return v + ((b * n.kvHeads + g) * n.tk + j) * n.dv;
  }

  /// One query row: out row and lse.
  void forwardRow(const T *q, const T *k, const T *v, int64_t b, int64_t h, int64_t i, T *out,
                  C *lse, std::vector<C> &acc, std::vector<C> &s) const {
    const int64_t g = h / (n.heads / n.kvHeads);
    const T *qi = qRow(q, b, h, i);
    C m = -std::numeric_limits<C>::infinity(), l = 0;
    std::fill(acc.begin(), acc.end(), C(0));
    const int64_t end = keyEnd(i);
    for (int64_t t0 = 0; t0 < end; t0 += kKeyTile) {
      const int64_t t1 = std::min(end, t0 + kKeyTile);
      C tm = -std::numeric_limits<C>::infinity();
      for (int64_t j = t0; j < t1; ++j) {
        s[j - t0] = score(qi, kRow(k, b, g, j), n.d, scale, mask, maskOffset(b, h, i, j));
        tm = std::max(tm, s[j - t0]);
      }
      const C mNew = std::max(m, tm);
      if (mNew == -std::numeric_limits<C>::infinity())
        continue;
      const C corr = expOf(m - mNew);
      C sum = 0;
      for (int64_t x = 0; x < n.dv; ++x)
        acc[x] *= corr;
      for (int64_t j = t0; j < t1; ++j) {
        const C p = expOf(s[j - t0] - mNew);
        sum += p;
        const C pr = rounded<T>(p);
        const T *vj = vRow(v, b, g, j);
        for (int64_t x = 0; x < n.dv; ++x)
          acc[x] += pr * load(vj + x);
      }
      l = l * corr + sum;
      m = mNew;
    }
    T *o = out + ((b * n.heads + h) * n.tq + i) * n.dv;
    for (int64_t x = 0; x < n.dv; ++x)
      store(o + x, l > 0 ? acc[x] / l : C(0));
    lse[(b * n.heads + h) * n.tq + i] = l > 0 ? m + std::log(l) : -std::numeric_limits<C>::infinity();
  }

  /// p_ij recomputed from the row's lse (0 where masked or the row is).
  C probability(const T *qi, const T *kj, C rowLse, int64_t b, int64_t h, int64_t i,
                int64_t j) const {
    if (rowLse == -std::numeric_limits<C>::infinity())
      return 0;
    const C s = score(qi, kj, n.d, scale, mask, maskOffset(b, h, i, j));
    return s == -std::numeric_limits<C>::infinity() ? C(0) : expOf(s - rowLse);
  }
};

template <typename T>
Status runForward(const Kernel<T> &kern, const TensorRef &q, const TensorRef &k,
                  const TensorRef &v, const TensorRef &out, const TensorRef &lse) {
  using C = ComputeType<T>;
  const Dims &n = kern.n;
  return parallelFor(0, n.batch * n.heads, 1, [&](int64_t begin, int64_t end) -> Status {
    std::vector<C> acc(static_cast<size_t>(n.dv)), s(kKeyTile);
    for (int64_t bh = begin; bh < end; ++bh)
      for (int64_t i = 0; i < n.tq; ++i)
        kern.forwardRow(q.as<T>(), k.as<T>(), v.as<T>(), bh / n.heads, bh % n.heads, i,
                        out.as<T>(), lse.as<C>(), acc, s);
    return Status::ok();
  });
}

template <typename T>
Status runBackward(const Kernel<T> &kern, const TensorRef &q, const TensorRef &k,
                   const TensorRef &v, const TensorRef &out, const TensorRef &lse,
                   const TensorRef &dout, const TensorRef &dq, const TensorRef &dk,
                   const TensorRef &dv) {
  using C = ComputeType<T>;
  const Dims &n = kern.n;
  const int64_t group = n.heads / n.kvHeads;
  const T *Q = q.as<T>(), *K = k.as<T>(), *V = v.as<T>(), *O = out.as<T>(), *dO = dout.as<T>();
  const C *L = lse.as<C>();
  // Dlt_i = dot(dout_i, out_i), once per query row.
  std::vector<C> delta(static_cast<size_t>(n.batch * n.heads * n.tq));
  for (int64_t r = 0; r < n.batch * n.heads * n.tq; ++r) {
    C acc = 0;
    for (int64_t x = 0; x < n.dv; ++x)
      acc += load(dO + r * n.dv + x) * load(O + r * n.dv + x);
    delta[r] = acc;
  }
  auto ds = [&](int64_t b, int64_t h, int64_t i, int64_t g, int64_t j, C &p) {
    const int64_t row = (b * n.heads + h) * n.tq + i;
    p = kern.probability(kern.qRow(Q, b, h, i), kern.kRow(K, b, g, j), L[row], b, h, i, j);
    if (p == 0)
      return C(0);
    C dp = 0;
    const T *vj = kern.vRow(V, b, g, j);
    for (int64_t x = 0; x < n.dv; ++x)
      dp += load(dO + row * n.dv + x) * load(vj + x);
    return p * (dp - delta[row]);
  };
  // dk and dv: one task per (batch, kv head), keys in order, each summing
  // over its group's heads, then query rows, in order.
  FSDP_RETURN_IF_ERROR(parallelFor(0, n.batch * n.kvHeads, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> dkAcc(static_cast<size_t>(n.d)), dvAcc(static_cast<size_t>(n.dv));
    for (int64_t bg = begin; bg < end; ++bg) {
      const int64_t b = bg / n.kvHeads, g = bg % n.kvHeads;
      for (int64_t j = 0; j < n.tk; ++j) {
        std::fill(dkAcc.begin(), dkAcc.end(), C(0));
        std::fill(dvAcc.begin(), dvAcc.end(), C(0));
        for (int64_t h = g * group; h < (g + 1) * group; ++h)
          for (int64_t i = kern.causal ? std::min(j, n.tq) : 0; i < n.tq; ++i) {
            C p;
            const C dsij = ds(b, h, i, g, j, p);
            if (p == 0)
              continue;
            const C pr = rounded<T>(p);
            const T *doi = dO + ((b * n.heads + h) * n.tq + i) * n.dv;
            for (int64_t x = 0; x < n.dv; ++x)
              dvAcc[x] += pr * load(doi + x);
            const T *qi = kern.qRow(Q, b, h, i);
            for (int64_t x = 0; x < n.d; ++x)
              dkAcc[x] += dsij * load(qi + x);
          }
        T *dkj = dk.as<T>() + ((b * n.kvHeads + g) * n.tk + j) * n.d;
        T *dvj = dv.as<T>() + ((b * n.kvHeads + g) * n.tk + j) * n.dv;
        for (int64_t x = 0; x < n.d; ++x)
          store(dkj + x, dkAcc[x] * kern.scale);
        for (int64_t x = 0; x < n.dv; ++x)
          store(dvj + x, dvAcc[x]);
      }
    }
    return Status::ok();
  }));
  // dq: one task per (batch, head), keys in order.
  return parallelFor(0, n.batch * n.heads, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> dqAcc(static_cast<size_t>(n.d));
    for (int64_t bh = begin; bh < end; ++bh) {
      const int64_t b = bh / n.heads, h = bh % n.heads, g = h / group;
      for (int64_t i = 0; i < n.tq; ++i) {
        std::fill(dqAcc.begin(), dqAcc.end(), C(0));
        for (int64_t j = 0; j < kern.keyEnd(i); ++j) {
          C p;
          const C dsij = ds(b, h, i, g, j, p);
          if (p == 0)
            continue;
          const T *kj = kern.kRow(K, b, g, j);
          for (int64_t x = 0; x < n.d; ++x)
            dqAcc[x] += dsij * load(kj + x);
        }
        T *dqi = dq.as<T>() + ((b * n.heads + h) * n.tq + i) * n.d;
        for (int64_t x = 0; x < n.d; ++x)
          store(dqi + x, dqAcc[x] * kern.scale);
      }
    }
    return Status::ok();
  });
}

} // namespace

Status attention(const TensorRef &q, const TensorRef &k, const TensorRef &v, const TensorRef *mask,
                 bool causal, float scale, const TensorRef &out, const TensorRef &lse) {
  Dims dims;
  MaskView view;
  FSDP_RETURN_IF_ERROR(checkOperands("attention", q, k, v, mask, lse, dims, view));
  if (out.dtype != q.dtype || out.rank != 4 || out.dims[0] != dims.batch ||
      out.dims[1] != dims.heads || out.dims[2] != dims.tq || out.dims[3] != dims.dv)
    return Status::error("attention: result must be [B, H, Tq, Dv] in the operands' type");
  Status status = Status::ok();
  FSDP_RETURN_IF_ERROR(dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        Kernel<T> kern{dims, view, static_cast<ComputeType<T>>(scale), causal};
        status = runForward(kern, q, k, v, out, lse);
      },
      "attention"));
  return status;
}

Status attentionGrad(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                     const TensorRef *mask, const TensorRef &out, const TensorRef &lse,
                     const TensorRef &dout, bool causal, float scale, const TensorRef &dq,
                     const TensorRef &dk, const TensorRef &dv) {
  Dims dims;
  MaskView view;
  FSDP_RETURN_IF_ERROR(checkOperands("attention_grad", q, k, v, mask, lse, dims, view));
  if (out.dtype != q.dtype || !sameType(out, dout) || !sameType(dq, q) || !sameType(dk, k) ||
      !sameType(dv, v) || out.rank != 4 || out.dims[3] != dims.dv || out.dims[2] != dims.tq)
    return Status::error("attention_grad: result, its gradient and the operands' gradients must "
                         "be shaped and typed as the forward's");
  Status status = Status::ok();
  FSDP_RETURN_IF_ERROR(dispatchFloat(
      q.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        Kernel<T> kern{dims, view, static_cast<ComputeType<T>>(scale), causal};
        status = runBackward(kern, q, k, v, out, lse, dout, dq, dk, dv);
      },
      "attention_grad"));
  return status;
}

} // namespace fsdp::rt::cpu
