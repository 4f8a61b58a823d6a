//===- ReductionKernels.cu - sum, max and mean over axes on the GPU --------===//
//
// ReduceSum / ReduceMax / ReduceMean with the CPU kernel's iteration spaces
// and summation order (ReductionKernels.cpp documents it), so results are
// the CPU's bits:
// - innermost dim reduced: a 16-thread segment per output walks its
//   contiguous runs in order, each in pieces of 1024 elements folded in the
//   CPU's 16-lane order (LaneFold.cuh); the piece values join the total
//   one after another;
// - innermost dim kept: one thread per output adds its terms in row-major
//   order of the reduced indices into a partial flushed to the total every
//   64 terms.
// The accumulator, identity and NaN rule are the CPU's (runtime/math/
// Reducer.h, the same code). No atomics: every output has one owner.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/LaneFold.cuh"
#include "runtime/backends/ReductionSpace.h"
#include "runtime/math/Reducer.h"

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

/// Innermost dim kept: a thread per output.
template <ReduceKind Kind, typename T>
__global__ void reduceColumnsKernel(const T *in, T *out, StridedLayout<1> kept,
                                    StridedLayout<1> reduced, int64_t outputs, int64_t count) {
  using R = Reducer<Kind, T>;
  using Acc = typename R::Acc;
  const int64_t terms = reduced.numElements();
  FSDP_GRID_STRIDE(o, outputs) {
    const T *base = in + kept.offset(0, o);
    Acc total = R::identity(), partial = R::identity();
    int64_t inBlock = 0;
    for (int64_t t = 0; t < terms; ++t) {
      partial = R::combine(partial, R::read(base + reduced.offset(0, t)));
      if (++inBlock == kBlockRows) {
        total = R::combine(total, partial);
        partial = R::identity();
        inBlock = 0;
      }
    }
    total = R::combine(total, partial);
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
    if (runsInnermost)
      return launch(ctx, "reduce", reduceRunsKernel<Kind, T>, gridForRows(outputs),
                    dim3(kBlockThreads), in.as<const T>(), out.as<T>(), kept, red, outputs,
                    reducedCount);
    return launchElementwise(ctx, "reduce", outputs, reduceColumnsKernel<Kind, T>,
                             in.as<const T>(), out.as<T>(), kept, red, outputs, reducedCount);
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
