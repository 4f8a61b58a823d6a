//===- StridedLayout.h - elementwise iteration over strided operands ------===//
//
// An elementwise iteration space over a contiguous output and its strided
// (broadcast, permuted or sliced) operands, with neighbouring dimensions
// merged where they are contiguous for every operand. Built on the host by
// both backends: the CPU kernels walk it row by row (cpu/kernels/
// Dispatch.h's forEachRow), and a CUDA kernel takes it by value and maps
// each thread's linear position to its operands' offsets (offset()).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_STRIDEDLAYOUT_H
#define FSDP_RUNTIME_MATH_STRIDEDLAYOUT_H

#include "runtime/math/HostDevice.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>

namespace fsdp::rt {

/// Row-major element strides of a contiguous tensor.
inline void contiguousStrides(const TensorRef &t, int64_t *strides) {
  int64_t s = 1;
  for (int i = t.rank - 1; i >= 0; --i) {
    strides[i] = s;
    s *= t.dims[i];
  }
}

/// The iteration space of an op writing a contiguous output (operand 0)
/// from N - 1 strided inputs: element (i0..ir) of operand k sits at
/// base[k] + sum(i_d * strides[k][d]). Strides may be 0 (broadcast) or
/// negative (reversed slice).
template <int N> struct StridedLayout {
  int rank = 0;
  int64_t dims[kMaxRank] = {};
  int64_t base[N] = {};
  int64_t strides[N][kMaxRank] = {};

  /// Drops size-1 dims and merges neighbours that are contiguous for every
  /// operand, so same-shape ops become one row and [B,T,C] + [C] becomes
  /// B*T rows of C. Leaves at least one dim.
  void coalesce() {
    int out = 0; // dims kept so far, outermost first, in [0, out)
    for (int d = 0; d < rank; ++d) {
      if (dims[d] == 1)
        continue;
      bool merge = out > 0;
      for (int k = 0; k < N && merge; ++k)
        merge = strides[k][out - 1] == strides[k][d] * dims[d];
      if (merge) {
        dims[out - 1] *= dims[d];
        for (int k = 0; k < N; ++k)
          strides[k][out - 1] = strides[k][d];
        continue;
      }
      dims[out] = dims[d];
      for (int k = 0; k < N; ++k)
        strides[k][out] = strides[k][d];
      ++out;
    }
    if (out == 0) { // a single element
      dims[0] = 1;
      for (int k = 0; k < N; ++k)
        strides[k][0] = 1;
      out = 1;
    }
    rank = out;
  }

  FSDP_HD int64_t numElements() const {
    int64_t n = 1;
    for (int d = 0; d < rank; ++d)
      n *= dims[d];
    return n;
  }

  /// Operand k's element offset at row-major position `linear` of the
  /// iteration space (what a GPU thread computes for its element).
  FSDP_HD int64_t offset(int k, int64_t linear) const {
    int64_t o = base[k];
    for (int d = rank - 1; d >= 0; --d) {
      int64_t i = linear % dims[d];
      linear /= dims[d];
      o += i * strides[k][d];
    }
    return o;
  }
};

/// The layout of `out` (contiguous) computed from `ins` broadcast numpy
/// style to out's shape (inputs align at the trailing dims; size-1 or
/// missing dims get stride 0). Coalesced.
template <int N>
StridedLayout<N> broadcastLayout(const TensorRef &out, const TensorRef *const (&ins)[N - 1]) {
  StridedLayout<N> layout;
  layout.rank = out.rank;
  for (int d = 0; d < out.rank; ++d)
    layout.dims[d] = out.dims[d];
  contiguousStrides(out, layout.strides[0]);
  for (int k = 1; k < N; ++k) {
    const TensorRef &in = *ins[k - 1];
    int64_t inStrides[kMaxRank];
    contiguousStrides(in, inStrides);
    int shift = out.rank - in.rank;
    for (int d = 0; d < out.rank; ++d) {
      int inDim = d - shift;
      layout.strides[k][d] = inDim < 0 || in.dims[inDim] == 1 ? 0 : inStrides[inDim];
    }
  }
  layout.coalesce();
  return layout;
}

/// Transpose: `out` (contiguous) reading `in` with out's dim d walking in's
/// dim perm[d] (every entry in [0, in.rank): requirePermutation). Coalesced.
inline StridedLayout<2> permutedLayout(const TensorRef &in, const int64_t *perm,
                                       const TensorRef &out) {
  int64_t inStrides[kMaxRank];
  contiguousStrides(in, inStrides);
  StridedLayout<2> layout;
  layout.rank = out.rank;
  for (int d = 0; d < out.rank; ++d)
    layout.dims[d] = out.dims[d];
  contiguousStrides(out, layout.strides[0]);
  for (int d = 0; d < out.rank; ++d)
    layout.strides[1][d] = inStrides[perm[d]];
  layout.coalesce();
  return layout;
}

/// The slice of `whole` at per-dim `starts` / `steps`, iterated over
/// `part`'s index space: `part` contiguous, `whole` strided (steps may be
/// negative). Operand `wholeOperand` (0 or 1) is the whole, the other one
/// the part, so the same layout reads a slice (slice) or writes one back
/// (slice_grad). Coalesced.
inline StridedLayout<2> sliceLayout(const TensorRef &part, const TensorRef &whole,
                                    const int64_t *starts, const int64_t *steps,
                                    int wholeOperand) {
  int64_t wholeStrides[kMaxRank];
  contiguousStrides(whole, wholeStrides);
  StridedLayout<2> layout;
  layout.rank = part.rank;
  for (int d = 0; d < part.rank; ++d) {
    layout.dims[d] = part.dims[d];
    layout.strides[wholeOperand][d] = wholeStrides[d] * steps[d];
    layout.base[wholeOperand] += starts[d] * wholeStrides[d];
  }
  contiguousStrides(part, layout.strides[1 - wholeOperand]);
  layout.coalesce();
  return layout;
}

/// For a transpose's coalesced layout (operand 1 the permuted input): the
/// dim q other than the innermost along which the input is densest, when
/// the innermost output dim does not read the input more densely than q
/// does (the transpose moves the innermost dim: both backends copy square
/// tiles over (q, innermost) so reads and writes stay local); -1 when rows
/// copy as they are.
inline int transposeTileDim(const StridedLayout<2> &layout) {
  const int inner = layout.rank - 1;
  if (inner <= 0)
    return -1;
  int q = 0;
  for (int d = 1; d < inner; ++d)
    if (layout.strides[1][d] < layout.strides[1][q])
      q = d;
  return layout.strides[1][q] > layout.strides[1][inner] ? -1 : q;
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_STRIDEDLAYOUT_H
