//===- AttentionShape.h - nn.attention's problem, checked once, and its math -===//
//
// Shared by both backends' attention kernels (cpu/kernels/AttentionKernels.cpp
// and cuda/kernels/AttentionKernels.cu). The operand checks are written
// once, so both refuse the same operands with the same words. The scalar
// formulas every element goes through (the masked score, the probability
// recomputed from the log-sum-exp, the rounding of a probability to the
// operand type, the running maximum, dropout's keep bit and factor, the
// fused multiply-add of every sum of products) and the key tile that sets
// where the online softmax rescales are FSDP_HD, so the CPU kernel's vectorized loops
// and the CUDA kernel's per-thread loops perform the same operations on
// every element in the same order: the SIMT tests require equal bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_ATTENTIONSHAPE_H
#define FSDP_RUNTIME_BACKENDS_ATTENTIONSHAPE_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/math/DropoutRng.h"
#include "runtime/math/ElementTypes.h"
#include "runtime/math/FastMath.h"
#include "runtime/math/HostDevice.h"
#include "runtime/support/DType.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cmath>
#include <cstdint>

namespace fsdp::rt {

/// Keys per online-softmax step: a query row's keys are walked in tiles
/// [0, 64), [64, 128), ... (the last cut at the row's end), and the running
/// output is rescaled once per tile, so the tile boundaries are part of the
/// result's bits on both backends.
inline constexpr int64_t kAttentionKeyTile = 64;

/// The mask read through broadcast strides over [B, H, Tq, Tk] (data null:
/// no mask).
struct AttentionMask {
  const void *data = nullptr;
  DType dtype = DType::Bool;
  int64_t stride[4] = {};

  FSDP_HD_INLINE int64_t offset(int64_t b, int64_t h, int64_t i, int64_t j) const {
    return b * stride[0] + h * stride[1] + i * stride[2] + j * stride[3];
  }
};

/// q [B, H, Tq, D], k [B, Hkv, Tk, D], v [B, Hkv, Tk, Dv], the mask,
/// whether keys after the query's own position (top-left causal) are cut,
/// and the dropout on the probabilities.
struct AttentionShape {
  int64_t batch = 0, heads = 0, kvHeads = 0, tq = 0, tk = 0, d = 0, dv = 0;
  AttentionMask mask;
  bool causal = false;
  /// Dropout (dropout_p > 0): element (b, h, i, j) of the probabilities is
  /// kept as nn.dropout keeps element ((b·H + h)·Tq + i)·Tk + j of that
  /// [B, H, Tq, Tk] tensor, from the stream dropKey = (seed, step).
  bool dropout = false;
  float dropRatio = 0.0f;
  uint64_t dropSeed = 0, dropKey = 0, dropThreshold = 0;

  /// The keys query row i sees: [0, keyEnd(i)).
  FSDP_HD_INLINE int64_t keyEnd(int64_t i) const {
    return causal ? (i + 1 < tk ? i + 1 : tk) : tk;
  }
  /// The first query row that sees key j (tq when none does).
  FSDP_HD_INLINE int64_t firstQuery(int64_t j) const { return causal ? (j < tq ? j : tq) : 0; }
  /// The key head query head h reads (grouped-query attention).
  FSDP_HD_INLINE int64_t kvHead(int64_t h) const { return h / (heads / kvHeads); }
  /// The first row of (b, h)'s queries in q, out, dout and lse, and of
  /// (b, g)'s keys in k and v (all [B, heads, T, D] contiguous).
  FSDP_HD_INLINE int64_t queryRow0(int64_t b, int64_t h) const { return (b * heads + h) * tq; }
  FSDP_HD_INLINE int64_t keyRow0(int64_t b, int64_t g) const { return (b * kvHeads + g) * tk; }
  /// Whether dropout keeps probability (b, h, i, j).
  FSDP_HD_INLINE bool keeps(int64_t b, int64_t h, int64_t i, int64_t j) const {
    const int64_t index = ((b * heads + h) * tq + i) * tk + j;
    return dropoutKeeps(dropKey, static_cast<uint64_t>(index), dropThreshold);
  }
};

/// The checks the forward and the gradient share: q, k, v, the optional
/// mask and lse; fills `s` (causal left to the caller).
inline Status attentionOperands(const char *op, const TensorRef &q, const TensorRef &k,
                                const TensorRef &v, const TensorRef *mask, const TensorRef &lse,
                                AttentionShape &s) {
  if (q.rank != 4 || k.rank != 4 || v.rank != 4)
    return Status::error(cat(op, ": query, key and value must have rank 4"));
  if (k.dtype != q.dtype || v.dtype != q.dtype)
    return Status::error(cat(op, ": query, key and value must share one element type"));
  s.batch = q.dims[0];
  s.heads = q.dims[1];
  s.kvHeads = k.dims[1];
  s.tq = q.dims[2];
  s.tk = k.dims[2];
  s.d = q.dims[3];
  s.dv = v.dims[3];
  if (k.dims[0] != s.batch || v.dims[0] != s.batch || v.dims[1] != s.kvHeads ||
      v.dims[2] != s.tk || k.dims[3] != s.d)
    return Status::error(cat(op, ": key and value shapes do not match the query's"));
  if (s.kvHeads <= 0 || s.heads % s.kvHeads != 0)
    return Status::error(cat(op, ": query heads must be a multiple of key heads"));
  const DType lseType = q.dtype == DType::F64 ? DType::F64 : DType::F32;
  if (lse.dtype != lseType || lse.rank != 3 || lse.dims[0] != s.batch ||
      lse.dims[1] != s.heads || lse.dims[2] != s.tq)
    return Status::error(cat(op, ": lse must be [B, H, Tq] in ", dtypeName(lseType)));
  s.mask = AttentionMask();
  if (!mask)
    return Status::ok();
  if (mask->dtype != DType::Bool && mask->dtype != q.dtype && mask->dtype != DType::F32)
    return Status::error(cat(op, ": mask must be bool, f32 or the operands' type"));
  const int64_t scores[4] = {s.batch, s.heads, s.tq, s.tk};
  if (mask->rank > 4)
    return Status::error(cat(op, ": mask has rank above 4"));
  int64_t stride = 1;
  for (int i = mask->rank - 1; i >= 0; --i) {
    const int axis = 4 - mask->rank + i;
    if (mask->dims[i] != 1 && mask->dims[i] != scores[axis])
      return Status::error(cat(op, ": mask does not broadcast to the scores"));
    s.mask.stride[axis] = mask->dims[i] == 1 ? 0 : stride;
    stride *= mask->dims[i];
  }
  s.mask.data = mask->data;
  s.mask.dtype = mask->dtype;
  return Status::ok();
}

/// dropout_p in [0, 1) and, above 0, the stream's seed and threshold (the
/// key is set by the kernel from the step).
inline Status attentionDropout(const char *op, const AttentionDropout &dropout,
                               AttentionShape &s) {
  if (!(dropout.p >= 0.0f && dropout.p < 1.0f))
    return Status::error(cat(op, ": dropout_p ", dropout.p, " is outside [0, 1)"));
  s.dropout = dropout.p > 0.0f;
  s.dropRatio = dropout.p;
  s.dropSeed = dropout.seed;
  s.dropThreshold = dropoutThreshold(dropout.p);
  s.dropKey = dropoutStreamKey(dropout.seed, dropout.step);
  return Status::ok();
}

/// The forward's checks: the operands' and out [B, H, Tq, Dv].
inline Status attentionShape(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                             const TensorRef *mask, bool causal, const TensorRef &out,
                             const TensorRef &lse, AttentionShape &s) {
  FSDP_RETURN_IF_ERROR(attentionOperands("attention", q, k, v, mask, lse, s));
  s.causal = causal;
  if (out.dtype != q.dtype || out.rank != 4 || out.dims[0] != s.batch ||
      out.dims[1] != s.heads || out.dims[2] != s.tq || out.dims[3] != s.dv)
    return Status::error("attention: result must be [B, H, Tq, Dv] in the operands' type");
  return Status::ok();
}

/// The gradient's checks: the operands', out and dout as the forward's
/// result, dq, dk, dv as q, k, v.
inline Status attentionGradShape(const TensorRef &q, const TensorRef &k, const TensorRef &v,
                                 const TensorRef *mask, const TensorRef &out,
                                 const TensorRef &lse, const TensorRef &dout, bool causal,
                                 const TensorRef &dq, const TensorRef &dk, const TensorRef &dv,
                                 AttentionShape &s) {
  FSDP_RETURN_IF_ERROR(attentionOperands("attention_grad", q, k, v, mask, lse, s));
  s.causal = causal;
  if (out.dtype != q.dtype || !sameType(out, dout) || !sameType(dq, q) || !sameType(dk, k) ||
      !sameType(dv, v) || out.rank != 4 || out.dims[3] != s.dv || out.dims[2] != s.tq)
    return Status::error("attention_grad: result, its gradient and the operands' gradients must "
                         "be shaped and typed as the forward's");
  return Status::ok();
}

/// acc + a · b rounded once: every product that is summed (the dot
/// products, the accumulations over keys or queries, delta) is an explicit
/// fused multiply-add, so both backends run their FMA units and round
/// alike (the builds contract nothing else: -ffp-contract=off, -fmad=false).
template <typename C> FSDP_HD_INLINE C multiplyAdd(C a, C b, C acc) { return std::fma(a, b, acc); }

/// -inf in C (a masked score, an empty row's lse).
template <typename C> FSDP_HD_INLINE C negativeInfinity() { return -static_cast<C>(INFINITY); }

/// std::max(a, b): NaN in b is dropped (the running maxima use it).
template <typename C> FSDP_HD_INLINE C maxOf(C a, C b) { return a < b ? b : a; }

/// The score of a query and a key from their dot product: scaled, then
/// masked (-inf where a bool mask is false, the additive mask added).
template <typename T>
FSDP_HD_INLINE ComputeType<T> maskedScore(ComputeType<T> dot, ComputeType<T> scale,
                                          const AttentionMask &mask, int64_t offset) {
  using C = ComputeType<T>;
  const C s = dot * scale;
  if (!mask.data)
    return s;
  switch (mask.dtype) {
  case DType::Bool:
    return static_cast<const uint8_t *>(mask.data)[offset] ? s : negativeInfinity<C>();
  case DType::F32:
    return s + static_cast<C>(static_cast<const float *>(mask.data)[offset]);
  default:
    return s + load(static_cast<const T *>(mask.data) + offset);
  }
}

/// The backward's probability from the masked score and the row's
/// log-sum-exp: 0 where the key is masked or the whole row is.
template <typename C> FSDP_HD_INLINE C recomputedProbability(C score, C rowLse) {
  // A select, not a branch, so that the CPU's loops over it vectorize.
  const C p = expOf(score - rowLse);
  return rowLse == negativeInfinity<C>() || score == negativeInfinity<C>() ? C(0) : p;
}

/// nn.dropout's scale of a kept element, 1 / (1 - ratio), computed as it
/// computes it.
template <typename C> FSDP_HD_INLINE C dropoutKeepScale(float ratio) {
  return C(1) / (C(1) - static_cast<C>(ratio));
}

/// What dropout multiplies probability (b, h, i, j) by: keepScale or 0.
template <typename C>
FSDP_HD_INLINE C dropoutFactor(const AttentionShape &n, C keepScale, int64_t b, int64_t h,
                               int64_t i, int64_t j) {
  return n.keeps(b, h, i, j) ? keepScale : C(0);
}

/// The probability as the products with v (forward) and dout (dv) use it:
/// rounded to the operand type T first, as torch's CPU flash kernel does
/// (exact for f32 and f64).
template <typename T> FSDP_HD_INLINE ComputeType<T> roundedProbability(ComputeType<T> p) {
  const T r = fromCompute<T>(p);
  return load(&r);
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_ATTENTIONSHAPE_H
