//===- NormalizationKernels.cu - softmax and layer norm on the GPU ---------===//
//
// Softmax / log-softmax along an axis and LayerNormalization, in the CPU
// kernels' order of operations (NormalizationKernels.cpp), so results are
// the CPU's bits, except where a machine's math library is called:
// log-softmax's log of the row sum, and f64's exp (the shared fast exp is
// f32's only), glibc on the CPU and libdevice here, within an ulp (the
// emulated tests run glibc on both sides, so they show bits):
// - softmax over the last dim: a 16-thread segment per row folds the
//   maximum and the sum of exponentials in the CPU's 16-lane order
//   (LaneFold.cuh), then writes the row;
// - softmax over a middle axis: one thread per column of each [len, inner]
//   block runs the maximum and the sum down the column in index order, as
//   the CPU does;
// - layer norm: a segment per row folds the sum, then the centred squares,
//   as the CPU's two passes, and writes y with scale and bias broadcast
//   over the normalized block.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/LaneFold.cuh"
#include "runtime/backends/OperandChecks.h"
#include "runtime/math/FastMath.h"

#include <cmath>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

template <typename C> __device__ inline C softmaxValue(C x, C max, C sum, bool log) {
  return log ? (x - max) - std::log(sum) : expOf(x - max) / sum;
}

template <typename T>
__global__ void softmaxRowsKernel(const T *in, T *out, int64_t rows, int64_t len, bool log) {
  using C = ComputeType<T>;
  FSDP_SEGMENT_LOOP(row, active, lane, rows) {
    const int64_t n = active ? len : 0;
    const T *x = in + row * len;
    const C max = laneFold(lane, n, C(-INFINITY), [&](int64_t i) { return load(x + i); },
                           Maximum{});
    const C sum =
        laneFold(lane, n, C(0), [&](int64_t i) { return expOf(load(x + i) - max); }, Plus{});
    for (int64_t i = lane; i < n; i += kFoldLanes)
      store(out + row * len + i, softmaxValue(load(x + i), max, sum, log));
  }
}

template <typename T>
__global__ void softmaxColumnsKernel(const T *in, T *out, int64_t outer, int64_t len,
                                     int64_t inner, bool log) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(column, outer * inner) {
    const int64_t o = column / inner, j = column % inner;
    const T *x = in + o * len * inner + j;
    T *y = out + o * len * inner + j;
    C max = C(-INFINITY), sum = C(0);
    for (int64_t i = 0; i < len; ++i) {
      const C v = load(x + i * inner);
      max = max < v ? v : max; // std::max(max, v), as the CPU
    }
    for (int64_t i = 0; i < len; ++i)
      sum += expOf(load(x + i * inner) - max);
    for (int64_t i = 0; i < len; ++i)
      store(y + i * inner, softmaxValue(load(x + i * inner), max, sum, log));
  }
}

/// Layer norm rows: input/scale/bias/y of storage T, statistics of U.
template <typename T, typename U>
__global__ void layerNormKernel(const T *x, const T *scale, const T *bias, T *y, U *mean,
                                U *invStdDev, int64_t rows, int64_t size, float epsilon,
                                StridedLayout<3> block) {
  using C = ComputeType<T>;
  FSDP_SEGMENT_LOOP(row, active, lane, rows) {
    const int64_t n = active ? size : 0;
    const T *xr = x + row * size;
    const C sum = laneFold(lane, n, C(0), [&](int64_t i) { return load(xr + i); }, Plus{});
    const C mu = sum / static_cast<C>(size);
    const C squares = laneFold(
        lane, n, C(0),
        [&](int64_t i) {
          const C centred = load(xr + i) - mu;
          return centred * centred;
        },
        Plus{});
    const C inv = C(1) / std::sqrt(squares / static_cast<C>(size) + static_cast<C>(epsilon));
    if (active && lane == 0) {
      store(mean + row, static_cast<ComputeType<U>>(mu));
      store(invStdDev + row, static_cast<ComputeType<U>>(inv));
    }
    for (int64_t j = lane; j < n; j += kFoldLanes) {
      const int64_t i = block.offset(0, j);
      C value = (load(xr + i) - mu) * inv * load(scale + block.offset(1, j));
      if (bias)
        value += load(bias + block.offset(2, j));
      store(y + row * size + i, value);
    }
  }
}

} // namespace

Status softmax(const KernelContext &ctx, const TensorRef &in, int64_t axis, bool log,
               const TensorRef &out) {
  const char *op = log ? "log_softmax" : "softmax";
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("softmax", in, axis, split));
  if (in.dtype != out.dtype)
    return Status::error("softmax: result must have the input's element type");
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        // Empty: nothing to launch, but only after the type check, as the
        // CPU refuses an empty integer tensor too.
        if (outer * len * inner == 0)
          return Status::ok();
        if (inner == 1)
          return launch(ctx, op, softmaxRowsKernel<T>, gridForRows(outer), dim3(kBlockThreads),
                        in.as<const T>(), out.as<T>(), outer, len, log);
        return launchElementwise(ctx, op, outer * inner, softmaxColumnsKernel<T>,
                                 in.as<const T>(), out.as<T>(), outer, len, inner, log);
      },
      op);
}

Status layerNorm(const KernelContext &ctx, const TensorRef &x, const TensorRef &scale,
                 const TensorRef *bias, int64_t axis, float epsilon, const TensorRef &y,
                 const TensorRef &mean, const TensorRef &invStdDev) {
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("layer_norm", x, axis, split));
  if (scale.dtype != x.dtype || y.dtype != x.dtype || (bias && bias->dtype != x.dtype))
    return Status::error("layer_norm: input, scale, bias and result must share an element type");
  if (mean.dtype != invStdDev.dtype)
    return Status::error("layer_norm: mean and inv_std_dev must share an element type");
  const int64_t rows = split.outer, size = split.len * split.inner;
  // The normalized block as a tensor of its own, so scale and bias
  // broadcast onto it (as the CPU kernel lays it out).
  TensorRef block;
  block.rank = x.rank - static_cast<int>(axis);
  for (int d = 0; d < block.rank; ++d)
    block.dims[d] = x.dims[axis + d];
  const TensorRef *ins[2] = {&scale, bias ? bias : &scale};
  const StridedLayout<3> layout = broadcastLayout<3>(block, ins);
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return dispatchFloat(
            mean.dtype,
            [&](auto statTag) {
              using U = decltype(statTag);
              if (rows == 0) // after the type checks, as the CPU
                return Status::ok();
              return launch(ctx, "layer_norm", layerNormKernel<T, U>, gridForRows(rows),
                            dim3(kBlockThreads), x.as<const T>(), scale.as<const T>(),
                            bias ? bias->as<const T>() : nullptr, y.as<T>(), mean.as<U>(),
                            invStdDev.as<U>(), rows, size, epsilon, layout);
            },
            "layer_norm statistics");
      },
      "layer_norm");
}

FSDP_CUDA_NAMESPACE_END
