//===- ShapeKernels.cu - data movement on the GPU --------------------------===//
//
// The data-movement family of CudaKernels.h. Nothing here does arithmetic,
// so elements move as unsigned integers of their size (dispatchBySize) and
// results are the CPU's bits. Transpose, slice and expand are one kernel:
// each thread copies the output element at its position from the input
// offset a host-built StridedLayout gives (the CPU's layouts, coalesced),
// except a transpose that moves the innermost dim, which goes through
// shared-memory tiles as the CPU's goes through cache-sized tiles.
// Concat and split copy each part's rows in one launch per part; flatten
// copies each input to its offset and zeroes only the gaps between them
// (everything first when the inputs are out of order); gather and
// trilu compute each output element's source. A gather index out of range
// is an IndexOutOfRange fault and leaves its element unwritten (checked
// even when the output is empty, as the CPU checks every index first).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/backends/OperandChecks.h"

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

template <typename U>
__global__ void stridedCopyKernel(U *dst, const U *src, StridedLayout<2> layout, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { dst[layout.offset(0, i)] = src[layout.offset(1, i)]; }
}

/// Tile edge of transposes that move the innermost dim; a block of
/// kBlockThreads threads covers a tile in kTile / kTileRows passes.
constexpr int kTile = 32;
constexpr int kTileRows = kBlockThreads / kTile;
static_assert(kBlockThreads % kTile == 0, "a block is whole tile rows");

/// A transpose that moves the innermost dim, over (q, innermost) in
/// kTile x kTile tiles, one tile per block and pass: the block reads the
/// tile along q (the input's contiguous dim) into shared memory and writes
/// it along the innermost output dim, so both sides are coalesced (a
/// per-element copy would read the input one strided element at a time).
/// `outer` walks the remaining dims (rank 0 when none). The tile loop
/// depends on blockIdx only, so every thread of a block reaches each
/// barrier.
template <typename U>
__global__ void transposeTileKernel(U *dst, const U *src, StridedLayout<2> outer, int64_t rows,
                                    int64_t cols, int64_t outRowStride, int64_t outColStride,
                                    int64_t inRowStride, int64_t inColStride, int64_t tilesR,
                                    int64_t tilesC, int64_t numTiles) {
  __shared__ U staged[kTile][kTile + 1]; // [column][row]; +1 spreads the banks
  const int lane = static_cast<int>(threadIdx.x) % kTile;
  const int row = static_cast<int>(threadIdx.x) / kTile;
  for (int64_t t = blockIdx.x; t < numTiles; t += gridDim.x) {
    const int64_t o = t / (tilesR * tilesC), rest = t % (tilesR * tilesC);
    const int64_t i0 = rest / tilesC * kTile, j0 = rest % tilesC * kTile;
    const U *in = src + outer.offset(1, o);
    U *out = dst + outer.offset(0, o);
    for (int c = row; c < kTile; c += kTileRows)
      if (i0 + lane < rows && j0 + c < cols)
        staged[c][lane] = in[(i0 + lane) * inRowStride + (j0 + c) * inColStride];
    __syncthreads();
    for (int r = row; r < kTile; r += kTileRows)
      if (i0 + r < rows && j0 + lane < cols)
        out[(i0 + r) * outRowStride + (j0 + lane) * outColStride] = staged[lane][r];
    __syncthreads(); // the tile is read before the next pass overwrites it
  }
}

template <typename U> __global__ void copyKernel(U *dst, const U *src, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { dst[i] = src[i]; }
}

template <typename U> __global__ void zeroKernel(U *dst, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { dst[i] = U(0); }
}

/// Part rows of `chunk` elements at `partOffset` within whole rows of
/// `wholeRow` elements, `outer` rows: to the whole (concat) or from it.
template <typename U>
__global__ void partKernel(U *whole, U *part, int64_t outer, int64_t chunk, int64_t wholeRow,
                           int64_t partOffset, bool toWhole) {
  FSDP_GRID_STRIDE(i, outer * chunk) {
    const int64_t o = i / chunk, e = i % chunk;
    U *w = whole + o * wholeRow + partOffset + e;
    if (toWhole)
      *w = part[i];
    else
      part[i] = *w;
  }
}

template <typename U, typename I>
__global__ void gatherKernel(const U *src, const I *idx, U *dst, int64_t outer, int64_t count,
                             int64_t dim, int64_t inner, KernelFault *fault, uint32_t launchId) {
  FSDP_GRID_STRIDE(e, outer * count * inner) {
    const int64_t k = e % inner, j = (e / inner) % count, o = e / (inner * count);
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim) {
      raiseFault(fault, launchId, FaultCode::IndexOutOfRange, v, j, dim);
      continue;
    }
    dst[e] = src[(o * dim + (v < 0 ? v + dim : v)) * inner + k];
  }
}

template <typename U>
__global__ void triluKernel(const U *src, U *dst, int64_t rows, int64_t cols, int64_t n,
                            bool upper, int64_t k) {
  FSDP_GRID_STRIDE(e, n) {
    const int64_t j = e % cols, i = (e / cols) % rows;
    const bool keep = upper ? j - i >= k : j - i <= k;
    dst[e] = keep ? src[e] : U(0);
  }
}

/// The CPU kernel's strided copy, as one launch.
Status copyStrided(const KernelContext &ctx, const StridedLayout<2> &layout, const TensorRef &in,
                   const TensorRef &out, const char *op) {
  const int64_t n = layout.numElements();
  return dispatchBySize(
      out.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, op, n, stridedCopyKernel<U>, out.as<U>(), in.as<const U>(),
                                 layout, n);
      },
      op);
}

/// The tiled transpose of `layout` over (q, innermost): the CPU's tiling,
/// one launch.
Status transposeTiles(const KernelContext &ctx, const StridedLayout<2> &layout, int q,
                      const TensorRef &in, const TensorRef &out) {
  const int inner = layout.rank - 1;
  StridedLayout<2> outer;
  for (int d = 0; d < inner; ++d) {
    if (d == q)
      continue;
    outer.dims[outer.rank] = layout.dims[d];
    for (int k = 0; k < 2; ++k)
      outer.strides[k][outer.rank] = layout.strides[k][d];
    ++outer.rank;
  }
  const int64_t rows = layout.dims[q], cols = layout.dims[inner];
  const int64_t tilesR = (rows + kTile - 1) / kTile, tilesC = (cols + kTile - 1) / kTile;
  const int64_t numTiles = outer.numElements() * tilesR * tilesC;
  const dim3 grid(static_cast<unsigned>(numTiles < kMaxBlocks ? numTiles : kMaxBlocks));
  return dispatchBySize(
      out.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launch(ctx, "transpose", transposeTileKernel<U>, grid, dim3(kBlockThreads),
                      out.as<U>(), in.as<const U>(), outer, rows, cols, layout.strides[0][q],
                      layout.strides[0][inner], layout.strides[1][q], layout.strides[1][inner],
                      tilesR, tilesC, numTiles);
      },
      "transpose");
}

/// Concat (toWhole) or split, one launch per non-empty part.
Status concatOrSplit(const KernelContext &ctx, const TensorRef &whole, const TensorRef *parts,
                     int count, int64_t axis, bool toWhole, const char *op) {
  const int ax = static_cast<int>(axis < 0 ? axis + whole.rank : axis);
  if (ax < 0 || ax >= whole.rank)
    return Status::error(cat(op, ": axis ", axis, " is outside the rank ", whole.rank));
  const int64_t outer = dimsProduct(whole.dims, 0, ax);
  const int64_t inner = dimsProduct(whole.dims, ax + 1, whole.rank);
  const int64_t wholeRow = whole.dims[ax] * inner;
  int64_t partOffset = 0;
  for (int p = 0; p < count; ++p) {
    const int64_t chunk = parts[p].dims[ax] * inner;
    FSDP_RETURN_IF_ERROR(dispatchBySize(
        whole.dtype,
        [&](auto unit) {
          using U = decltype(unit);
          return launchElementwise(ctx, op, outer * chunk, partKernel<U>, whole.as<U>(),
                                   parts[p].as<U>(), outer, chunk, wholeRow, partOffset,
                                   toWhole);
        },
        op));
    partOffset += chunk;
  }
  return Status::ok();
}

} // namespace

Status copy(const KernelContext &ctx, const TensorRef &in, const TensorRef &out) {
  if (in.data == out.data || in.byteSize() == 0)
    return Status::ok();
  const int64_t n = in.numElements();
  return dispatchBySize(
      in.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, "copy", n, copyKernel<U>, out.as<U>(), in.as<const U>(), n);
      },
      "copy");
}

Status flatten(const KernelContext &ctx, const TensorRef *inputs, const int64_t *offsets,
               int count, const TensorRef &out) {
  const int64_t total = out.numElements();
  bool ascending = true; // inputs in offset order, none overlapping the next
  for (int i = 0; i < count; ++i) {
    const TensorRef &in = inputs[i];
    const int64_t n = in.numElements();
    if (in.dtype != out.dtype || offsets[i] < 0 || n > total || offsets[i] > total - n)
      return Status::error(cat("flatten: operand ", i, " (", n, " x ", dtypeName(in.dtype),
                               " at ", offsets[i], ") does not fit in ", total, " x ",
                               dtypeName(out.dtype)));
    if (i > 0 && offsets[i] < offsets[i - 1] + inputs[i - 1].numElements())
      ascending = false;
  }
  // As the CPU's: the compiler lays a unit's parameters out in order, so
  // normally every element is written once (the gaps and the end padding
  // zeroed, the inputs copied); any other order zeroes everything first.
  return dispatchBySize(
      out.dtype,
      [&](auto unit) -> Status {
        using U = decltype(unit);
        U *dst = out.as<U>();
        auto zero = [&](int64_t begin, int64_t end) {
          return begin < end ? launchElementwise(ctx, "flatten", end - begin, zeroKernel<U>,
                                                 dst + begin, end - begin)
                             : Status::ok();
        };
        if (!ascending)
          FSDP_RETURN_IF_ERROR(zero(0, total));
        int64_t done = 0; // elements of out already written
        for (int i = 0; i < count; ++i) {
          const int64_t n = inputs[i].numElements();
          if (ascending)
            FSDP_RETURN_IF_ERROR(zero(done, offsets[i]));
          FSDP_RETURN_IF_ERROR(launchElementwise(ctx, "flatten", n, copyKernel<U>,
                                                 dst + offsets[i], inputs[i].as<const U>(), n));
          done = offsets[i] + n;
        }
        return ascending ? zero(done, total) : Status::ok();
      },
      "flatten");
}

Status transpose(const KernelContext &ctx, const TensorRef &in, const int64_t *perm,
                 const TensorRef &out) {
  if (out.numElements() == 0)
    return Status::ok();
  FSDP_RETURN_IF_ERROR(requirePermutation("transpose", perm, out.rank, in.rank));
  const StridedLayout<2> layout = permutedLayout(in, perm, out);
  const int q = transposeTileDim(layout);
  if (q < 0)
    return copyStrided(ctx, layout, in, out, "transpose");
  return transposeTiles(ctx, layout, q, in, out);
}

Status concat(const KernelContext &ctx, const TensorRef *inputs, int count, int64_t axis,
              const TensorRef &out) {
  return concatOrSplit(ctx, out, inputs, count, axis, /*toWhole=*/true, "concat");
}

Status split(const KernelContext &ctx, const TensorRef &in, int64_t axis, const TensorRef *outputs,
             int count) {
  return concatOrSplit(ctx, in, outputs, count, axis, /*toWhole=*/false, "split");
}

Status slice(const KernelContext &ctx, const TensorRef &in, const int64_t *starts,
             const int64_t *steps, const TensorRef &out) {
  if (out.numElements() == 0)
    return Status::ok();
  return copyStrided(ctx, sliceLayout(out, in, starts, steps, /*wholeOperand=*/1), in, out,
                     "slice");
}

Status expand(const KernelContext &ctx, const TensorRef &in, const TensorRef &out) {
  if (out.numElements() == 0)
    return Status::ok();
  return copyStrided(ctx, broadcastLayout<2>(out, {&in}), in, out, "expand");
}

Status gather(const KernelContext &ctx, const TensorRef &data, const TensorRef &indices,
              int64_t axis, const TensorRef &out) {
  const int ax = static_cast<int>(axis < 0 ? axis + data.rank : axis);
  if (ax < 0 || ax >= data.rank)
    return Status::error(cat("gather: axis ", axis, " is outside the rank ", data.rank));
  const int64_t count = indices.numElements(), dim = data.dims[ax];
  const int64_t outer = dimsProduct(data.dims, 0, ax), inner = dimsProduct(data.dims, ax + 1, data.rank);
  return dispatchIndex(
      indices.dtype,
      [&](auto indexTag) {
        using I = decltype(indexTag);
        if (outer * inner == 0)
          return launchElementwise(ctx, "gather", count, checkIndicesKernel<I>,
                                   indices.as<const I>(), count, dim, ctx.fault, ctx.launch);
        return dispatchBySize(
            data.dtype,
            [&](auto unit) {
              using U = decltype(unit);
              return launchElementwise(ctx, "gather", outer * count * inner, gatherKernel<U, I>,
                                       data.as<const U>(), indices.as<const I>(), out.as<U>(),
                                       outer, count, dim, inner, ctx.fault, ctx.launch);
            },
            "gather");
      },
      "gather");
}

Status trilu(const KernelContext &ctx, const TensorRef &in, bool upper, int64_t k,
             const TensorRef &out) {
  if (in.rank < 2)
    return Status::error(cat("trilu: rank ", in.rank, " input, at least 2 expected"));
  const int64_t rows = in.dims[in.rank - 2], cols = in.dims[in.rank - 1];
  const int64_t n = in.numElements();
  if (n == 0)
    return Status::ok();
  // Beyond +-(rows + cols) every row is all kept or all zero (the CPU's clamp).
  const int64_t limit = rows + cols;
  k = k < -limit ? -limit : (k > limit ? limit : k);
  return dispatchBySize(
      in.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, "trilu", n, triluKernel<U>, in.as<const U>(), out.as<U>(),
                                 rows, cols, n, upper, k);
      },
      "trilu");
}

FSDP_CUDA_NAMESPACE_END
