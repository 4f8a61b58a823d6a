//===- ShapeKernels.cpp - data movement on the CPU ---------------------===//
//
// The data-movement family of CpuKernels.h: copy (reshape), transpose,
// concat/split, slice, expand, gather, trilu and flatten (a unit's
// gradients packed into its flat buffer). None of them does
// arithmetic, so they move elements as unsigned integers of the element's
// size (dispatchBySize) or as bytes. Transpose, slice and expand describe
// the input as a strided view of the output's index space (StridedLayout in
// Dispatch.h), which merges dims that stay contiguous: whatever keeps the
// innermost dim in place ((0,2,1,3) in attention) becomes memcpy rows, and
// a transpose that moves the innermost dim is done in square tiles so both
// sides stay in cache. Gather checks every index before writing anything.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <algorithm>
#include <cstring>

namespace fsdp::rt::cpu {
namespace {

/// Tile edge for transposes that move the innermost dim: 32x32 elements
/// keep a tile's source and destination lines in L1 for every element size.
constexpr int64_t kTransposeTile = 32;

int64_t normalizeAxis(int64_t axis, int rank) { return axis < 0 ? axis + rank : axis; }

/// Copies a layout<2> (operand 0 the contiguous output, operand 1 a strided
/// view of `in`) row by row: contiguous rows are memcpy, broadcast rows a
/// fill, anything else a strided loop.
Status copyStrided(const StridedLayout<2> &layout, const TensorRef &in, const TensorRef &out,
                   const char *op) {
  return dispatchBySize(
      out.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        const U *src = in.as<const U>();
        U *dst = out.as<U>();
        // Copies: any split across the rank's threads gives the same bits.
        forEachRowParallel(layout, kElementwiseGrain,
                           [&](const int64_t *off, int64_t n, const int64_t *s) {
                             U *o = dst + off[0];
                             const U *x = src + off[1];
                             if (s[1] == 1)
                               std::memcpy(o, x, static_cast<size_t>(n) * sizeof(U));
                             else if (s[1] == 0)
                               std::fill(o, o + n, *x);
                             else
                               for (int64_t i = 0; i < n; ++i)
                                 o[i] = x[i * s[1]];
                           });
      },
      op);
}

/// Transpose whose innermost output dim is not the input's innermost: walk
/// the outer dims, and over (dim q, the input's unit-stride one) x (the
/// innermost output dim) copy square tiles, writing output rows while
/// reading input columns that stay cached across the tile.
template <typename U> void transposeTiled(const StridedLayout<2> &layout, int q, const U *src, U *dst) {
  int inner = layout.rank - 1;
  int64_t rows = layout.dims[q], cols = layout.dims[inner];
  int64_t outRowStride = layout.strides[0][q], inRowStride = layout.strides[1][q];
  int64_t inColStride = layout.strides[1][inner];
  // The remaining dims, plus a size-1 dim so each outer position is a row.
  StridedLayout<2> outer;
  for (int d = 0; d < inner; ++d) {
    if (d == q)
      continue;
    outer.dims[outer.rank] = layout.dims[d];
    for (int k = 0; k < 2; ++k)
      outer.strides[k][outer.rank] = layout.strides[k][d];
    ++outer.rank;
  }
  outer.dims[outer.rank++] = 1;
  forEachRowParallel(outer,
                     std::max<int64_t>(1, kElementwiseGrain / std::max<int64_t>(1, rows * cols)),
                     [&](const int64_t *off, int64_t, const int64_t *) {
                       for (int64_t i0 = 0; i0 < rows; i0 += kTransposeTile) {
                         int64_t i1 = std::min(rows, i0 + kTransposeTile);
                         for (int64_t j0 = 0; j0 < cols; j0 += kTransposeTile) {
                           int64_t j1 = std::min(cols, j0 + kTransposeTile);
                           for (int64_t i = i0; i < i1; ++i) {
                             U *o = dst + off[0] + i * outRowStride;
                             const U *x = src + off[1] + i * inRowStride;
                             for (int64_t j = j0; j < j1; ++j)
                               o[j] = x[j * inColStride];
                           }
                         }
                       }
                     });
}

/// Concat (toWhole) or split: `whole` is the parts laid end to end along
/// `axis`, so for each index of the dims before the axis each part owns one
/// contiguous chunk of `whole`.
void concatOrSplit(const TensorRef &whole, const TensorRef *parts, int count, int64_t axis,
                   bool toWhole) {
  int ax = static_cast<int>(normalizeAxis(axis, whole.rank));
  size_t elem = dtypeSize(whole.dtype);
  int64_t outer = dimsProduct(whole.dims, 0, ax);
  size_t innerBytes = static_cast<size_t>(dimsProduct(whole.dims, ax + 1, whole.rank)) * elem;
  size_t wholeRowBytes = static_cast<size_t>(whole.dims[ax]) * innerBytes;
  char *wholeBase = static_cast<char *>(whole.data);
  size_t partOffset = 0;
  for (int p = 0; p < count; ++p) {
    size_t chunk = static_cast<size_t>(parts[p].dims[ax]) * innerBytes;
    if (chunk != 0) {
      char *partBase = static_cast<char *>(parts[p].data);
      for (int64_t o = 0; o < outer; ++o) {
        char *w = wholeBase + o * wholeRowBytes + partOffset;
        char *part = partBase + o * chunk;
        if (toWhole)
          std::memcpy(w, part, chunk);
        else
          std::memcpy(part, w, chunk);
      }
    }
    partOffset += chunk;
  }
}

template <typename I>
Status gatherTyped(const TensorRef &data, const TensorRef &indices, int ax, const TensorRef &out) {
  const I *idx = indices.as<const I>();
  int64_t count = indices.numElements(), dim = data.dims[ax];
  for (int64_t j = 0; j < count; ++j) {
    int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim)
      return Status::error(cat("gather: index ", v, " (at position ", j,
                               " of the indices) is out of range for dimension ", ax,
                               " of size ", dim));
  }
  int64_t outer = dimsProduct(data.dims, 0, ax);
  int64_t inner = dimsProduct(data.dims, ax + 1, data.rank);
  if (outer == 0 || inner == 0 || count == 0)
    return Status::ok();
  return dispatchBySize(
      data.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        const U *src = data.as<const U>();
        U *dst = out.as<U>();
        for (int64_t o = 0; o < outer; ++o)
          for (int64_t j = 0; j < count; ++j) {
            int64_t v = static_cast<int64_t>(idx[j]);
            const U *row = src + (o * dim + (v < 0 ? v + dim : v)) * inner;
            U *dstRow = dst + (o * count + j) * inner;
            if (inner == 1) // gathering scalars: skip the memcpy call
              *dstRow = *row;
            else
              std::memcpy(dstRow, row, static_cast<size_t>(inner) * sizeof(U));
          }
      },
      "gather");
}

} // namespace

Status copy(const TensorRef &in, const TensorRef &out) {
  if (in.data == out.data || in.byteSize() == 0)
    return Status::ok();
  std::memmove(out.data, in.data, in.byteSize());
  return Status::ok();
}

Status flatten(const TensorRef *inputs, const int64_t *offsets, int count, const TensorRef &out) {
  const size_t elementSize = dtypeSize(out.dtype), total = static_cast<size_t>(out.numElements());
  bool ascending = true; // inputs in offset order, none overlapping the next
  for (int i = 0; i < count; ++i) {
    const TensorRef &in = inputs[i];
    size_t n = static_cast<size_t>(in.numElements());
    if (in.dtype != out.dtype || offsets[i] < 0 || n > total ||
        static_cast<size_t>(offsets[i]) > total - n)
      return Status::error(cat("flatten: operand ", i, " (", n, " x ", dtypeName(in.dtype),
                               " at ", offsets[i], ") does not fit in ", total, " x ",
                               dtypeName(out.dtype)));
    if (i > 0 && offsets[i] < offsets[i - 1] + inputs[i - 1].numElements())
      ascending = false;
  }
  // The compiler lays a unit's parameters out in order, so normally every
  // output byte is written once: the gaps (and the end padding) zeroed, the
  // inputs copied. Any other order zeroes everything first.
  char *dst = static_cast<char *>(out.data);
  if (!ascending)
    std::memset(dst, 0, total * elementSize);
  size_t done = 0; // elements of out already written
  for (int i = 0; i < count; ++i) {
    size_t begin = static_cast<size_t>(offsets[i]), n = static_cast<size_t>(inputs[i].numElements());
    if (ascending && begin > done)
      std::memset(dst + done * elementSize, 0, (begin - done) * elementSize);
    if (n > 0)
      std::memcpy(dst + begin * elementSize, inputs[i].data, n * elementSize);
    done = begin + n;
  }
  if (ascending && total > done)
    std::memset(dst + done * elementSize, 0, (total - done) * elementSize);
  return Status::ok();
}

Status transpose(const TensorRef &in, const int64_t *perm, const TensorRef &out) {
  if (out.numElements() == 0)
    return Status::ok();
  FSDP_RETURN_IF_ERROR(requirePermutation("transpose", perm, out.rank, in.rank));
  const StridedLayout<2> layout = permutedLayout(in, perm, out);

  // The dim the input walks contiguously; tiles only pay when it is not
  // already the innermost output dim.
  const int q = transposeTileDim(layout);
  if (q < 0)
    return copyStrided(layout, in, out, "transpose");
  return dispatchBySize(
      out.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        transposeTiled<U>(layout, q, in.as<const U>(), out.as<U>());
      },
      "transpose");
}

Status concat(const TensorRef *inputs, int count, int64_t axis, const TensorRef &out) {
  concatOrSplit(out, inputs, count, axis, /*toWhole=*/true);
  return Status::ok();
}

Status split(const TensorRef &in, int64_t axis, const TensorRef *outputs, int count) {
  concatOrSplit(in, outputs, count, axis, /*toWhole=*/false);
  return Status::ok();
}

Status slice(const TensorRef &in, const int64_t *starts, const int64_t *steps, const TensorRef &out) {
  if (out.numElements() == 0)
    return Status::ok();
  return copyStrided(sliceLayout(out, in, starts, steps, /*wholeOperand=*/1), in, out, "slice");
}

Status expand(const TensorRef &in, const TensorRef &out) {
  if (out.numElements() == 0)
    return Status::ok();
  return copyStrided(broadcastLayout<2>(out, {&in}), in, out, "expand");
}

Status gather(const TensorRef &data, const TensorRef &indices, int64_t axis, const TensorRef &out) {
  int ax = static_cast<int>(normalizeAxis(axis, data.rank));
  return dispatchIndex(
      indices.dtype, [&](auto i) { return gatherTyped<decltype(i)>(data, indices, ax, out); },
      "gather");
}

Status trilu(const TensorRef &in, bool upper, int64_t k, const TensorRef &out) {
  if (in.rank < 2)
    return Status::error(cat("trilu: rank ", in.rank, " input, at least 2 expected"));
  int64_t rows = in.dims[in.rank - 2], cols = in.dims[in.rank - 1];
  int64_t batch = dimsProduct(in.dims, 0, in.rank - 2);
  if (rows == 0 || cols == 0 || batch == 0)
    return Status::ok();
  // Clamping k keeps i + k from overflowing; beyond +-(rows + cols) every
  // row is all kept or all zero anyway.
  k = std::clamp(k, -(rows + cols), rows + cols);
  size_t elem = dtypeSize(in.dtype), rowBytes = static_cast<size_t>(cols) * elem;
  const char *src = static_cast<const char *>(in.data);
  char *dst = static_cast<char *>(out.data);
  // Zero is the all-zero bit pattern in every dtype, so rows are bytes.
  for (int64_t r = 0; r < batch * rows; ++r) {
    int64_t i = r % rows;
    // Kept columns are [keepBegin, keepEnd).
    int64_t keepBegin = upper ? std::clamp(i + k, int64_t(0), cols) : 0;
    int64_t keepEnd = upper ? cols : std::clamp(i + k + 1, int64_t(0), cols);
    keepEnd = std::max(keepEnd, keepBegin);
    const char *x = src + r * rowBytes;
    char *o = dst + r * rowBytes;
    std::memset(o, 0, static_cast<size_t>(keepBegin) * elem);
    if (x != o)
      std::memcpy(o + keepBegin * elem, x + keepBegin * elem,
                  static_cast<size_t>(keepEnd - keepBegin) * elem);
    std::memset(o + keepEnd * elem, 0, static_cast<size_t>(cols - keepEnd) * elem);
  }
  return Status::ok();
}

} // namespace fsdp::rt::cpu
