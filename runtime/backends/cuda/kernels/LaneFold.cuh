//===- LaneFold.cuh - the CPU's 16-lane row fold on 16 GPU threads --------===//
//
// The CPU kernels fold a contiguous row through 16 interleaved accumulators
// (element i into lane i mod 16, in increasing i) combined by halving (lane
// l with lane l + w for w = 8, 4, 2, 1): cpu/kernels/Dispatch.h's laneFold
// and the reductions' pieces. Sixteen consecutive GPU threads reproduce it
// exactly: thread l accumulates lane l's elements in the same order, and a
// shuffle down by w within the 16-thread segment combines lane l with lane
// l + w, the same operand order as the CPU's. The result is broadcast to
// all 16 threads, so a row's statistics come out the CPU's bits. The
// shuffles are collective over the whole warp, so every thread of a warp
// must reach each fold: FSDP_SEGMENT_LOOP gives rows to segments in rounds
// whose count is the same for every thread of the grid, and a segment
// without a row in the last round folds nothing (n = 0) and stores nothing.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_LANEFOLD_CUH
#define FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_LANEFOLD_CUH

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"

FSDP_CUDA_NAMESPACE_BEGIN

inline constexpr int kFoldLanes = 16;

/// A shuffle of any accumulator type: CUDA shuffles 32 and 64-bit values,
/// so narrower integers travel widened and come back exact.
template <typename C> __device__ inline C shuffleDown(C value, int width) {
  if constexpr (sizeof(C) < 4)
    return static_cast<C>(__shfl_down_sync(0xffffffffu, static_cast<int32_t>(value), width,
                                           kFoldLanes));
  else
    return __shfl_down_sync(0xffffffffu, value, width, kFoldLanes);
}
template <typename C> __device__ inline C shuffleFirst(C value) {
  if constexpr (sizeof(C) < 4)
    return static_cast<C>(__shfl_sync(0xffffffffu, static_cast<int32_t>(value), 0, kFoldLanes));
  else
    return __shfl_sync(0xffffffffu, value, 0, kFoldLanes);
}

/// Combines the 16 lanes of the calling segment by halving and returns
/// lane 0's result to every thread of the segment.
template <typename C, typename Op> __device__ inline C foldLanes(C value, Op op) {
  for (int width = kFoldLanes / 2; width >= 1; width /= 2)
    value = op(value, shuffleDown(value, width));
  return shuffleFirst(value);
}

/// laneFold(n, init, value, op) with `lane` = the thread's index in its
/// segment: value(i) for i in [0, n), as the CPU folds it.
template <typename C, typename Value, typename Op>
__device__ inline C laneFold(int lane, int64_t n, C init, Value value, Op op) {
  C acc = init;
  for (int64_t i = lane; i < n; i += kFoldLanes)
    acc = op(acc, value(i));
  return foldLanes(acc, op);
}

/// Rows [0, rows) over the grid's 16-thread segments: `row` is this
/// segment's row in the round and `active` whether it has one; `lane` its
/// thread's index in the segment. Launch with a multiple of 32 threads.
#define FSDP_SEGMENT_LOOP(row, active, lane, rows)                                                 \
  const int lane = static_cast<int>(threadIdx.x % kFoldLanes);                                     \
  const int64_t segments_ = int64_t(gridDim.x) * blockDim.x / kFoldLanes;                          \
  const int64_t segment_ = (int64_t(blockIdx.x) * blockDim.x + threadIdx.x) / kFoldLanes;          \
  for (int64_t round_ = 0, row = segment_; round_ < (rows); round_ += segments_, row += segments_) \
    if (const bool active = row < (rows); true)

/// Blocks for `rows` rows, one 16-thread segment each.
inline dim3 gridForRows(int64_t rows) { return gridFor(rows * kFoldLanes); }

/// The CPU's `plus` and `maximum` (std::max: NaN in the second operand is
/// dropped, as the CPU's row maxima do).
struct Plus {
  template <typename C> __device__ C operator()(C a, C b) const { return a + b; }
};
struct Maximum {
  template <typename C> __device__ C operator()(C a, C b) const { return a < b ? b : a; }
};

FSDP_CUDA_NAMESPACE_END

#endif // FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_LANEFOLD_CUH
