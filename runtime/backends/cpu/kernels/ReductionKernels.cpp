//===- ReductionKernels.cpp - sum, max and mean over axes on the CPU ------===//
//
// ReduceSum / ReduceMax / ReduceMean over a sorted list of axes. The input's
// dims split into a kept and a reduced iteration space (each coalesced, so
// adjacent dims merge and size-1 dims vanish); the loop shape then depends
// only on whether the innermost non-trivial dim is reduced or kept, which
// covers the two common cases directly: reducing trailing dims (each output
// reduces contiguous runs) and reducing leading dims (each input row adds
// into a contiguous block of outputs). Floats accumulate in their compute
// type (float for f32/f16/bf16, double for f64) as torch does on CPU, so
// the summation order is fixed and documented here, because later stages
// compare results bit for bit. It is blocked, which keeps float rounding
// error growing with the block length rather than the element count:
//   - innermost dim reduced: each contiguous run splits into pieces of
//     kPiece elements (from its start); in a piece, element i goes to lane
//     i mod kLanes and the lanes combine by halving (lane l += lane l + w
//     for w = kLanes/2 .. 1); the piece values add to the output one after
//     another, runs in row-major order;
//   - innermost dim kept: each output adds its terms one by one, in
//     row-major order of the reduced indices, into a block partial that is
//     added to the output's total after every kBlockRows terms (and once
//     more at the end).
// Integers sum in their own width with wrap-around (no signed-overflow UB)
// and their mean truncates toward zero. Max propagates NaN. An empty
// reduction gives 0 (sum), -inf or the lowest integer (max) and NaN (float
// mean); an empty integer mean is an error.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/Reducer.h"
#include "runtime/backends/ReductionSpace.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

namespace fsdp::rt::cpu {
namespace {

/// Independent accumulators of a contiguous run: enough for the compiler to
/// fill several vector registers and hide the add latency.
constexpr int kLanes = 16;
/// Elements of a run reduced into one value before joining the total.
constexpr int64_t kPiece = 1024;
/// Outputs accumulated at once when the innermost dim is kept.
constexpr int64_t kColumns = 256;
/// Terms per output summed into a partial before joining the total.
constexpr int64_t kBlockRows = 64;

// Reducer<Kind, T>: runtime/math/Reducer.h (shared with the CUDA kernels).

/// One piece of a contiguous run: kLanes interleaved accumulators, then a
/// halving tree.
template <typename R, typename T> typename R::Acc reducePiece(const T *p, int64_t n) {
  typename R::Acc lanes[kLanes];
  std::fill(lanes, lanes + kLanes, R::identity());
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes)
    for (int l = 0; l < kLanes; ++l)
      lanes[l] = R::combine(lanes[l], R::read(p + i + l));
  for (int l = 0; i + l < n; ++l)
    lanes[l] = R::combine(lanes[l], R::read(p + i + l));
  for (int width = kLanes / 2; width >= 1; width /= 2)
    for (int l = 0; l < width; ++l)
      lanes[l] = R::combine(lanes[l], lanes[l + width]);
  return lanes[0];
}

/// Innermost dim reduced: each output element reduces its runs piece by
/// piece. Every run of `reduced` has stride 1 (it is the input's innermost
/// dim), so the step forEachRow passes is not needed.
template <ReduceKind Kind, typename T>
void reduceRuns(const T *in, T *out, const StridedLayout<1> &kept,
                const StridedLayout<1> &reduced, int64_t count) {
  using R = Reducer<Kind, T>;
  int64_t o = 0;
  forEachRow(kept, [&](const int64_t *keptOffset, int64_t keptCount, const int64_t *keptStep) {
    for (int64_t k = 0; k < keptCount; ++k, ++o) {
      const T *base = in + keptOffset[0] + k * keptStep[0];
      typename R::Acc total = R::identity();
      forEachRow(reduced, [&](const int64_t *offset, int64_t n, const int64_t *) {
        for (int64_t start = 0; start < n; start += kPiece)
          total = R::combine(total, reducePiece<R>(base + offset[0] + start,
                                                   std::min(kPiece, n - start)));
      });
      R::finish(out + o, total, count);
    }
  });
}

/// Innermost dim kept: for a block of contiguous outputs, add input rows of
/// the same block in row-major order of the reduced indices, through block
/// partials. Every row of `kept` has stride 1 (it is the input's innermost
/// dim).
template <ReduceKind Kind, typename T>
void reduceColumns(const T *in, T *out, const StridedLayout<1> &kept,
                   const StridedLayout<1> &reduced, int64_t count) {
  using R = Reducer<Kind, T>;
  typename R::Acc total[kColumns], partial[kColumns];
  int64_t o = 0;
  forEachRow(kept, [&](const int64_t *keptOffset, int64_t keptCount, const int64_t *) {
    for (int64_t c0 = 0; c0 < keptCount; c0 += kColumns) {
      const int64_t width = std::min(kColumns, keptCount - c0);
      const T *base = in + keptOffset[0] + c0;
      std::fill(total, total + width, R::identity());
      std::fill(partial, partial + width, R::identity());
      auto flush = [&] {
        for (int64_t c = 0; c < width; ++c) {
          total[c] = R::combine(total[c], partial[c]);
          partial[c] = R::identity();
        }
      };
      int64_t terms = 0; // in the current block
      // Wide: each column's sum stays its own sequence, so every copy
      // gives the same bits.
      runWide([&] {
        forEachRow(reduced, [&](const int64_t *offset, int64_t n, const int64_t *step) {
          for (int64_t r = 0; r < n; ++r) {
            const T *p = base + offset[0] + r * step[0];
            for (int64_t c = 0; c < width; ++c)
              partial[c] = R::combine(partial[c], R::read(p + c));
            if (++terms == kBlockRows) {
              flush();
              terms = 0;
            }
          }
        });
      });
      flush();
      for (int64_t c = 0; c < width; ++c)
        R::finish(out + o + c0 + c, total[c], count);
    }
    o += keptCount;
  });
}

} // namespace

Status reduce(ReduceKind kind, const TensorRef &in, const int64_t *axes, int count,
              const TensorRef &out) {
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

  // The outputs split across the rank's threads by the kept space's
  // outermost dim: each output is still reduced by one thread in the
  // order above, so the bits do not depend on the split.
  const int64_t keptCount = kept.numElements();
  const int64_t perOuter = keptCount > 0 ? keptCount / kept.dims[0] : 0;
  const int64_t outerWork = std::max<int64_t>(1, perOuter * std::max<int64_t>(reducedCount, 1));
  auto run = [&](auto kindTag, auto tag) {
    constexpr ReduceKind Kind = decltype(kindTag)::value;
    using T = decltype(tag);
    if (keptCount == 0)
      return;
    (void)parallelFor(0, kept.dims[0], std::max<int64_t>(1, kElementwiseGrain / outerWork),
                      [&](int64_t begin, int64_t end) {
                        const StridedLayout<1> piece = outerPiece(kept, begin, end);
                        T *o = out.as<T>() + begin * perOuter;
                        if (runsInnermost)
                          reduceRuns<Kind, T>(in.as<T>(), o, piece, red, reducedCount);
                        else
                          reduceColumns<Kind, T>(in.as<T>(), o, piece, red, reducedCount);
                      });
  };
  return dispatchNumeric(
      in.dtype,
      [&](auto tag) {
        switch (kind) {
        case ReduceKind::Sum:
          return run(std::integral_constant<ReduceKind, ReduceKind::Sum>{}, tag);
        case ReduceKind::Max:
          return run(std::integral_constant<ReduceKind, ReduceKind::Max>{}, tag);
        case ReduceKind::Mean:
          return run(std::integral_constant<ReduceKind, ReduceKind::Mean>{}, tag);
        }
      },
      "reduce");
}

} // namespace fsdp::rt::cpu
