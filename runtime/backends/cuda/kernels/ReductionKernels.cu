//===- ReductionKernels.cu - sum, max and mean over axes on the GPU --------===//
//
// ReduceSum / ReduceMax / ReduceMean with the CPU kernel's iteration spaces
// and summation order (ReductionKernels.cpp documents it), so results are
// the CPU's bits:
// - innermost dim reduced: a 16-thread segment per output walks its
//   contiguous runs in order, each in pieces of 1024 elements folded in the
//   CPU's 16-lane order (LaneFold.cuh); the piece values join the total
//   one after another; an output of 16 pieces or more gets a block whose
//   segments fold 16 pieces at once, joined in the same order;
// - innermost dim kept: each output's terms, in row-major order of the
//   reduced indices, form partials of 64 terms joined to the total one
//   after another; kLanes threads per output compute the partials in
//   parallel and one joins them in order.
// The accumulator, identity and NaN rule are the CPU's (runtime/math/
// Reducer.h, the same code). No atomics: every output has one owner.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/LaneFold.cuh"
#include "runtime/backends/ReductionSpace.h"
#include "runtime/math/Reducer.h"

#include <algorithm>
#include <limits>
#include <type_traits>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

constexpr int64_t kPiece = 1024;
constexpr int64_t kBlockRows = 64;

template <typename R> struct Combine {
  template <typename A> __device__ A operator()(A a, A b) const { return R::combine(a, b); }
};

/// Innermost dim reduced: a segment per output.
template <ReduceKind Kind, typename T>
__global__ void reduceRunsKernel(const T *in, T *out, StridedLayout<1> kept,
                                 StridedLayout<1> reduced, int64_t outputs, int64_t count) {
  using R = Reducer<Kind, T>;
  using Acc = typename R::Acc;
  const int64_t runLength = reduced.dims[reduced.rank - 1];
  const int64_t runs = runLength == 0 ? 0 : reduced.numElements() / runLength;
  FSDP_SEGMENT_LOOP(o, active, lane, outputs) {
    const T *base = in + (active ? kept.offset(0, o) : 0);
    Acc total = R::identity();
    // Every segment runs the same folds (LaneFold.cuh: the shuffles are
    // warp-collective); one without an output folds empty pieces.
    for (int64_t r = 0; r < runs; ++r) {
      const T *run = active ? base + reduced.offset(0, r * runLength) : base;
      for (int64_t start = 0; start < runLength; start += kPiece) {
        const int64_t rest = runLength - start < kPiece ? runLength - start : kPiece;
        const Acc piece = laneFold(
            lane, active ? rest : 0, R::identity(),
            [&](int64_t i) { return R::read(run + start + i); }, Combine<R>{});
        total = R::combine(total, piece);
      }
    }
    if (active && lane == 0)
      R::finish(out + o, total, count);
  }
}

/// Innermost dim reduced, outputs of at least kSegments pieces each (a
/// clip-norm or loss sum over a whole tensor): a block per output whose
/// 16-thread segments fold kSegments pieces at once, staged in shared
/// memory and joined in piece order by one thread: the same pieces, the
/// same order, so the bits of reduceRunsKernel, with kSegments times more
/// threads on each output.
constexpr int kSegments = kBlockThreads / kFoldLanes;

template <ReduceKind Kind, typename T>
__global__ void reduceLongRunsKernel(const T *in, T *out, StridedLayout<1> kept,
                                     StridedLayout<1> reduced, int64_t outputs, int64_t count) {
  using R = Reducer<Kind, T>;
  using Acc = typename R::Acc;
  __shared__ Acc pieces[kSegments];
  const int lane = static_cast<int>(threadIdx.x % kFoldLanes);
  const int segment = static_cast<int>(threadIdx.x / kFoldLanes);
  const int64_t runLength = reduced.dims[reduced.rank - 1];
  const int64_t runs = runLength == 0 ? 0 : reduced.numElements() / runLength;
  const int64_t perRun = (runLength + kPiece - 1) / kPiece, all = runs * perRun;
  // Every thread of the block runs the same iterations: the barriers and
  // the folds' shuffles are uniform.
  for (int64_t o = blockIdx.x; o < outputs; o += gridDim.x) {
    const T *base = in + kept.offset(0, o);
    Acc total = R::identity();
    for (int64_t p0 = 0; p0 < all; p0 += kSegments) {
      const int64_t p = p0 + segment;
      const bool has = p < all;
      const int64_t start = has ? p % perRun * kPiece : 0;
      const int64_t rest = has ? (runLength - start < kPiece ? runLength - start : kPiece) : 0;
      const T *run = has ? base + reduced.offset(0, p / perRun * runLength) : base;
      const Acc piece = laneFold(
          lane, rest, R::identity(), [&](int64_t i) { return R::read(run + start + i); },
          Combine<R>{});
      if (lane == 0)
        pieces[segment] = piece;
      __syncthreads();
      if (threadIdx.x == 0)
        for (int64_t q = 0; q < kSegments && p0 + q < all; ++q)
          total = R::combine(total, pieces[q]);
      __syncthreads();
    }
    if (threadIdx.x == 0)
      R::finish(out + o, total, count);
  }
}

/// Innermost dim kept: a block per tile of kColumns outputs with kLanes
/// lanes each. The CPU's order is a partial of every 64 terms (in
/// row-major order of the reduced indices; the last partial the rest,
/// possibly none) joined to the total one after another; lane l computes
/// the partials of every kLanes-th 64-term chunk, staged in shared memory
/// kLanes at a time, and lane 0 joins them in chunk order: the CPU's bits,
/// with chains kLanes times shorter than one thread per output walking all
/// its terms. Adjacent threads of a warp read adjacent outputs (the kept
/// innermost dim), so the loads coalesce.
constexpr int kColumns = 32, kLanes = 8;
static_assert(kColumns * kLanes == kBlockThreads, "gridFor(outputs * kLanes) counts the tiles");

template <ReduceKind Kind, typename T>
__global__ void reduceColumnsKernel(const T *in, T *out, StridedLayout<1> kept,
                                    StridedLayout<1> reduced, int64_t outputs, int64_t count) {
  using R = Reducer<Kind, T>;
  using Acc = typename R::Acc;
  __shared__ Acc partials[kLanes * kColumns];
  const int64_t terms = reduced.numElements(), chunks = terms / kBlockRows + 1;
  const int64_t column = threadIdx.x % kColumns, lane = threadIdx.x / kColumns;
  // Every thread of the block runs the same iterations: the barriers are uniform.
  for (int64_t tile = blockIdx.x; tile * kColumns < outputs; tile += gridDim.x) {
    const int64_t o = tile * kColumns + column;
    const bool active = o < outputs;
    const T *base = in + (active ? kept.offset(0, o) : 0);
    Acc total = R::identity();
    for (int64_t c0 = 0; c0 < chunks; c0 += kLanes) {
      const int64_t c = c0 + lane;
      Acc partial = R::identity();
      if (active && c < chunks) {
        const int64_t end = terms < (c + 1) * kBlockRows ? terms : (c + 1) * kBlockRows;
        for (int64_t t = c * kBlockRows; t < end; ++t)
          partial = R::combine(partial, R::read(base + reduced.offset(0, t)));
      }
      partials[lane * kColumns + column] = partial;
      __syncthreads();
      if (lane == 0)
        for (int64_t l = 0; l < kLanes && c0 + l < chunks; ++l)
          total = R::combine(total, partials[l * kColumns + column]);
      __syncthreads();
    }
    if (active && lane == 0)
      R::finish(out + o, total, count);
  }
}

} // namespace

Status reduce(const KernelContext &ctx, ReduceKind kind, const TensorRef &in, const int64_t *axes,
              int count, const TensorRef &out) {
  if (in.dtype != out.dtype)
    return Status::error("reduce: result must have the input's element type");
  ReductionSpace space;
  FSDP_RETURN_IF_ERROR(reductionSpace("reduce", in, axes, count, out.numElements(), space));
  const StridedLayout<1> &kept = space.kept, &red = space.reduced;
  const int64_t reducedCount = space.reducedCount;
  const bool isInt = !isFloat(in.dtype);
  if (kind == ReduceKind::Mean && isInt && reducedCount == 0 && kept.numElements() > 0)
    return Status::error("reduce: integer mean over an empty set of elements");
  const bool runsInnermost = space.runsInnermost;
  const int64_t outputs = kept.numElements();

  auto run = [&](auto kindTag, auto tag) -> Status {
    constexpr ReduceKind Kind = decltype(kindTag)::value;
    using T = decltype(tag);
    // No outputs: nothing to launch, but only after the type check, as the
    // CPU refuses an empty bool tensor too.
    if (outputs == 0)
      return Status::ok();
    const int64_t runLength = red.dims[red.rank - 1];
    const int64_t pieces =
        runLength == 0 ? 0 : red.numElements() / runLength * ((runLength + kPiece - 1) / kPiece);
    if (runsInnermost && pieces >= kSegments)
      return launch(ctx, "reduce", reduceLongRunsKernel<Kind, T>,
                    dim3(static_cast<unsigned>(std::min<int64_t>(outputs, kMaxBlocks))),
                    dim3(kBlockThreads), in.as<const T>(), out.as<T>(), kept, red, outputs,
                    reducedCount);
    if (runsInnermost)
      return launch(ctx, "reduce", reduceRunsKernel<Kind, T>, gridForRows(outputs),
                    dim3(kBlockThreads), in.as<const T>(), out.as<T>(), kept, red, outputs,
                    reducedCount);
    // A block of kColumns x kLanes threads per kColumns outputs.
    return launch(ctx, "reduce", reduceColumnsKernel<Kind, T>, gridFor(outputs * kLanes),
                  dim3(kColumns * kLanes), in.as<const T>(), out.as<T>(), kept, red, outputs,
                  reducedCount);
  };
  return dispatchNumeric(
      in.dtype,
      [&](auto tag) -> Status {
        switch (kind) {
        case ReduceKind::Sum:
          return run(std::integral_constant<ReduceKind, ReduceKind::Sum>{}, tag);
        case ReduceKind::Max:
          return run(std::integral_constant<ReduceKind, ReduceKind::Max>{}, tag);
        case ReduceKind::Mean:
          return run(std::integral_constant<ReduceKind, ReduceKind::Mean>{}, tag);
        }
        return Status::error("reduce: unknown kind");
      },
      "reduce");
}

FSDP_CUDA_NAMESPACE_END
