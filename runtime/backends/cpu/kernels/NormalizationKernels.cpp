//===- NormalizationKernels.cpp - softmax and layer norm on the CPU ----------------===//
//
// Softmax and log-softmax along one axis, and LayerNormalization over a
// trailing block of dims. Softmax subtracts the maximum before
// exponentiating so large scores cannot overflow; when the axis is the last
// dim each row is a contiguous run, otherwise the input is walked as
// [outer, axis, inner] blocks with the contiguous inner dim as the vector
// loop (in column chunks that fit a stack buffer, since kernels do not
// allocate). Layer norm takes two passes (mean, then the biased variance of
// the centred values), which is more accurate than the one-pass E[x^2] -
// E[x]^2 form. Everything accumulates in the compute type in a fixed order,
// so results depend on nothing but the inputs: maxima and sums over a
// contiguous row use kLanes interleaved accumulators (element i into lane
// i mod kLanes, lanes combined by halving, the order reduce uses for one
// piece of a run), which the compiler vectorizes; the strided softmax adds
// down each column in index order (vectorized across columns instead).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/FastMath.h"

#include <algorithm>
#include <cmath>
#include <vector>
#include <type_traits>

namespace fsdp::rt::cpu {
namespace {

/// Columns of the strided softmax handled per pass: its statistics live on
/// the stack (2 x 1024 compute values), and whole rows of typical hidden
/// sizes stream contiguously, which measured 2-3x faster than 64 columns.
constexpr int64_t kSoftmaxColumns = 1024;

/// f32/f64 outputs hold exp(x - max) between the sum and the division, so
/// each element is exponentiated once; 16-bit outputs would round it, so
/// they hold it in a per-thread row of the compute type instead (the same
/// values, so the same bits as recomputing it, at half the exps).
template <typename T> inline constexpr bool kOutputHoldsExp = std::is_same_v<T, ComputeType<T>>;

/// The calling thread's scratch row of at least `len` compute values.
template <typename C> C *scratchRow(int64_t len) {
  static thread_local std::vector<C> row;
  if (static_cast<int64_t>(row.size()) < len)
    row.resize(static_cast<size_t>(len));
  return row.data();
}

/// The final value of one element given its row's max and sum of exps.
template <typename C> C softmaxValue(C x, C max, C sum, bool log) {
  return log ? (x - max) - std::log(sum) : expOf(x - max) / sum;
}

/// Softmax over the last dim: `rows` contiguous runs of `len`.
template <typename T>
void softmaxContiguous(const T *in, T *out, int64_t rows, int64_t len, bool log) {
  using C = ComputeType<T>;
  // Rows split across the rank's threads (Dispatch.h's rowGrain).
  (void)parallelFor(0, rows, rowGrain(len), [&](int64_t firstRow, int64_t endRow) {
    // Each row in a wide (AVX2) loop: the same IEEE operations, 8 lanes.
    for (int64_t r = firstRow; r < endRow; ++r) runWide([&] {
      const T *x = in + r * len;
      T *y = out + r * len;
      const C max = laneFold(
          len, C(-INFINITY), [&](int64_t i) { return load(x + i); }, maximum<C>);
      if (!log) {
        // Independent exp calls first, then a vectorized sum and division.
        C *e = nullptr;
        if constexpr (kOutputHoldsExp<T>)
          e = y;
        else
          e = scratchRow<C>(len);
        for (int64_t i = 0; i < len; ++i)
          e[i] = expOf(load(x + i) - max);
        const C sum = laneFold(
            len, C(0), [&](int64_t i) { return e[i]; }, plus<C>);
        for (int64_t i = 0; i < len; ++i)
          store(y + i, e[i] / sum);
        return;
      }
      const C sum = laneFold(
          len, C(0), [&](int64_t i) { return expOf(load(x + i) - max); }, plus<C>);
      for (int64_t i = 0; i < len; ++i)
        store(y + i, softmaxValue(load(x + i), max, sum, log));
    });
  });
}

/// Softmax over a middle axis: for each outer index, a [len, inner] block
/// normalized down its columns, `kSoftmaxColumns` columns at a time.
template <typename T>
void softmaxStrided(const T *in, T *out, int64_t outer, int64_t len, int64_t inner, bool log) {
  using C = ComputeType<T>;
  (void)parallelFor(0, outer, rowGrain(len * inner), [&](int64_t firstOuter, int64_t endOuter) {
    C max[kSoftmaxColumns], sum[kSoftmaxColumns];
    for (int64_t o = firstOuter; o < endOuter; ++o) {
      for (int64_t c0 = 0; c0 < inner; c0 += kSoftmaxColumns) {
        const int64_t width = std::min(kSoftmaxColumns, inner - c0);
        const T *x = in + o * len * inner + c0;
        T *y = out + o * len * inner + c0;
        std::fill(max, max + width, C(-INFINITY));
        std::fill(sum, sum + width, C(0));
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < width; ++j)
            max[j] = std::max(max[j], load(x + i * inner + j));
        if constexpr (kOutputHoldsExp<T>) {
          if (!log) {
            for (int64_t i = 0; i < len; ++i)
              for (int64_t j = 0; j < width; ++j) {
                const C e = expOf(load(x + i * inner + j) - max[j]);
                y[i * inner + j] = e;
                sum[j] += e;
              }
            for (int64_t i = 0; i < len; ++i)
              for (int64_t j = 0; j < width; ++j)
                y[i * inner + j] /= sum[j];
            continue;
          }
        }
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < width; ++j)
            sum[j] += expOf(load(x + i * inner + j) - max[j]);
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < width; ++j)
            store(y + i * inner + j, softmaxValue(load(x + i * inner + j), max[j], sum[j], log));
      }
    }
  });
}

/// Layer norm with input/scale/bias/y of storage type T and statistics of
/// storage type U (ONNX's stash_type may differ from the input's).
template <typename T, typename U>
void layerNormImpl(const TensorRef &x, const TensorRef &scale, const TensorRef *bias,
                   int64_t axis, float epsilon, const TensorRef &y, const TensorRef &mean,
                   const TensorRef &invStdDev) {
  using C = ComputeType<T>;
  const int64_t rows = dimProduct(x, 0, static_cast<int>(axis));
  const int64_t size = dimProduct(x, static_cast<int>(axis), x.rank);
  // The normalized block as a tensor of its own, so scale and bias
  // broadcast onto it; with full-shape scale and bias this coalesces into
  // one contiguous run per row.
  TensorRef block;
  block.rank = x.rank - static_cast<int>(axis);
  std::copy(x.dims + axis, x.dims + x.rank, block.dims);
  const TensorRef *ins[2] = {&scale, bias ? bias : &scale};
  const StridedLayout<3> layout = broadcastLayout<3>(block, ins);

  const T *xData = x.as<T>();
  const T *scaleData = scale.as<T>();
  const T *biasData = bias ? bias->as<T>() : nullptr;
  T *yData = y.as<T>();
  (void)parallelFor(0, rows, rowGrain(size), [&](int64_t firstRow, int64_t endRow) {
    for (int64_t r = firstRow; r < endRow; ++r) {
      const T *xr = xData + r * size;
      const C sum = laneFold(
          size, C(0), [&](int64_t i) { return load(xr + i); }, plus<C>);
      const C mu = sum / static_cast<C>(size);
      const C squares = laneFold(
          size, C(0),
          [&](int64_t i) {
            const C centred = load(xr + i) - mu;
            return centred * centred;
          },
          plus<C>);
      const C inv = C(1) / std::sqrt(squares / static_cast<C>(size) + static_cast<C>(epsilon));
      store(mean.as<U>() + r, static_cast<ComputeType<U>>(mu));
      store(invStdDev.as<U>() + r, static_cast<ComputeType<U>>(inv));

      T *yr = yData + r * size;
      forEachRow(layout, [&](const int64_t *offsets, int64_t count, const int64_t *steps) {
        for (int64_t j = 0; j < count; ++j) {
          const int64_t i = offsets[0] + j * steps[0];
          C value = (load(xr + i) - mu) * inv * load(scaleData + offsets[1] + j * steps[1]);
          if (biasData)
            value += load(biasData + offsets[2] + j * steps[2]);
          store(yr + i, value);
        }
      });
    }
  });
}

} // namespace

Status softmax(const TensorRef &in, int64_t axis, bool log, const TensorRef &out) {
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("softmax", in, axis, split));
  if (in.dtype != out.dtype)
    return Status::error("softmax: result must have the input's element type");
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        if (inner == 1)
          softmaxContiguous(in.as<T>(), out.as<T>(), outer, len, log);
        else
          softmaxStrided(in.as<T>(), out.as<T>(), outer, len, inner, log);
      },
      log ? "log_softmax" : "softmax");
}

Status layerNorm(const TensorRef &x, const TensorRef &scale, const TensorRef *bias, int64_t axis,
                 float epsilon, const TensorRef &y, const TensorRef &mean,
                 const TensorRef &invStdDev) {
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("layer_norm", x, axis, split));
  if (scale.dtype != x.dtype || y.dtype != x.dtype || (bias && bias->dtype != x.dtype))
    return Status::error("layer_norm: input, scale, bias and result must share an element type");
  if (mean.dtype != invStdDev.dtype)
    return Status::error("layer_norm: mean and inv_std_dev must share an element type");
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return dispatchFloat(
            mean.dtype,
            [&](auto statTag) {
              layerNormImpl<T, decltype(statTag)>(x, scale, bias, axis, epsilon, y, mean,
                                                  invStdDev);
            },
            "layer_norm statistics");
      },
      "layer_norm");
}

} // namespace fsdp::rt::cpu
