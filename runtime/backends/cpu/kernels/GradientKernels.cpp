//===- GradientKernels.cpp - backward kernels of the CPU backend ----------===//
//
// The gradient kernels of plan.fbs other than the losses' (those are in
// LossGradKernels.cpp): activations, softmax and log-softmax, layer norm,
// and the adjoints of gather, slice, reduce-max and dropout. Elementwise
// formulas follow torch 1.13's CPU kernels term for term (same operation
// order, compute type float for f32/f16/bf16 and double for f64), so values
// agree with torch to the last bit or two. Row sums (softmax, layer norm)
// accumulate in double, one element after another in index order: more
// accurate than the forward's float lanes, which matters when gradients of
// long rows nearly cancel, and deterministic. When the reduced axis is not
// the innermost, sums go down columns in chunks held on the stack (kernels
// do not allocate). Adjoints that scatter (gather, slice) zero their result
// first and then add or write in index order, so repeated indices add up
// deterministically. Layer norm's 16-bit dscale and dbias are the one
// exception to double sums: torch sums them in the input's dtype
// (LayerNormParamGrad.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/backends/ReductionSpace.h"
#include "runtime/math/Activations.h"
#include "runtime/math/LayerNormParamGrad.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace fsdp::rt::cpu {
namespace {

/// Columns whose double sums live on the stack at once (8 KiB per array).
constexpr int64_t kColumns = 1024;

// --- Activations -------------------------------------------------------------------

template <typename T, typename Fn>
void runActivationGrad(const TensorRef &saved, const TensorRef &dy, const TensorRef &dx, Fn fn) {
  const T *s = saved.as<const T>();
  const T *g = dy.as<const T>();
  T *o = dx.as<T>();
  (void)parallelFor(0, dx.numElements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
    runWide([&] {
      for (int64_t i = begin; i < end; ++i)
        store(o + i, fn(load(s + i), load(g + i)));
    });
  });
}

template <typename T>
void activationGradTyped(ActivationGradKind kind, const TensorRef &saved, const TensorRef &dy,
                         const TensorRef &dx) {
  using C = ComputeType<T>;
  switch (kind) {
  case ActivationGradKind::Relu:
    runActivationGrad<T>(saved, dy, dx, [](C y, C g) { return reluGradOf(y, g); });
    break;
  case ActivationGradKind::Erf:
    runActivationGrad<T>(saved, dy, dx, [](C x, C g) { return erfGradOf(x, g); });
    break;
  case ActivationGradKind::Tanh:
    runActivationGrad<T>(saved, dy, dx, [](C y, C g) { return tanhGradOf(y, g); });
    break;
  case ActivationGradKind::Sigmoid:
    runActivationGrad<T>(saved, dy, dx, [](C y, C g) { return sigmoidGradOf(y, g); });
    break;
  }
}

// --- Softmax -------------------------------------------------------------------------

/// The row statistic: sum(dy * y) for softmax, sum(dy) for log-softmax.
template <typename C> double softmaxTerm(C y, C g, bool log) {
  return log ? static_cast<double>(g) : static_cast<double>(g * y);
}
template <typename C> C softmaxGradValue(C y, C g, C sum, bool log) {
  return log ? g - expOf(y) * sum : y * (g - sum);
}

/// Softmax over `len` elements `inner` apart, for `outer` blocks, with
/// columns of a block processed kColumns at a time (inner == 1: rows).
template <typename T>
void softmaxGradImpl(const T *y, const T *dy, T *dx, int64_t outer, int64_t len, int64_t inner,
                     bool log) {
  using C = ComputeType<T>;
  if (inner == 1) {
    // Contiguous rows (softmax over the last axis): a lane fold in double,
    // then one vectorizable pass.
    (void)parallelFor(0, outer, rowGrain(len), [&](int64_t firstRow, int64_t endRow) {
      for (int64_t o = firstRow; o < endRow; ++o) {
        const T *yr = y + o * len, *gr = dy + o * len;
        T *out = dx + o * len;
        const C sum = static_cast<C>(laneFold(
            len, 0.0, [&](int64_t i) { return softmaxTerm(load(yr + i), load(gr + i), log); },
            plus<double>));
        for (int64_t i = 0; i < len; ++i)
          store(out + i, softmaxGradValue(load(yr + i), load(gr + i), sum, log));
      }
    });
    return;
  }
  (void)parallelFor(0, outer, rowGrain(len * inner), [&](int64_t firstOuter, int64_t endOuter) {
    double sums[kColumns];
    for (int64_t o = firstOuter; o < endOuter; ++o)
      for (int64_t c0 = 0; c0 < inner; c0 += kColumns) {
        const int64_t width = std::min(kColumns, inner - c0), base = o * len * inner + c0;
        std::fill(sums, sums + width, 0.0);
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < width; ++j) {
            const int64_t at = base + i * inner + j;
            sums[j] += softmaxTerm(load(y + at), load(dy + at), log);
          }
        for (int64_t i = 0; i < len; ++i)
          for (int64_t j = 0; j < width; ++j) {
            const int64_t at = base + i * inner + j;
            store(dx + at,
                  softmaxGradValue(load(y + at), load(dy + at), static_cast<C>(sums[j]), log));
          }
      }
  });
}

// --- Layer norm ------------------------------------------------------------------------

/// Values and statistics of storage type T; mean and inv_std_dev of U.
template <typename T, typename U>
void layerNormGradImpl(const TensorRef &x, const TensorRef &scale, const TensorRef &mean,
                       const TensorRef &invStdDev, const TensorRef &dy, int64_t rows,
                       int64_t size, const TensorRef &dx, const TensorRef &dscale,
                       const TensorRef &dbias) {
  using C = ComputeType<T>;
  const T *xData = x.as<const T>(), *scaleData = scale.as<const T>(), *dyData = dy.as<const T>();
  const U *meanData = mean.as<const U>(), *invData = invStdDev.as<const U>();
  auto stats = [&](int64_t r, C &mu, C &inv) {
    mu = static_cast<C>(load(meanData + r));
    inv = static_cast<C>(load(invData + r));
  };
  // dx = inv * (dxhat - mean(dxhat) - xhat * mean(dxhat * xhat)), dxhat = dy * scale.
  T *dxData = dx.as<T>();
  (void)parallelFor(0, rows, rowGrain(size), [&](int64_t firstRow, int64_t endRow) {
    for (int64_t r = firstRow; r < endRow; ++r) {
      C mu, inv;
      stats(r, mu, inv);
      const T *xr = xData + r * size, *gr = dyData + r * size;
      auto g = [&](int64_t i) { return load(gr + i) * load(scaleData + i); };
      auto xhat = [&](int64_t i) { return (load(xr + i) - mu) * inv; };
      const double sumG = laneFold(
          size, 0.0, [&](int64_t i) { return static_cast<double>(g(i)); }, plus<double>);
      const double sumGX = laneFold(
          size, 0.0, [&](int64_t i) { return static_cast<double>(g(i) * xhat(i)); }, plus<double>);
      const C meanG = static_cast<C>(sumG / static_cast<double>(size));
      const C meanGX = static_cast<C>(sumGX / static_cast<double>(size));
      T *out = dxData + r * size;
      for (int64_t i = 0; i < size; ++i)
        store(out + i, inv * (g(i) - meanG - xhat(i) * meanGX));
    }
  });
  // dscale = sum over rows of dy * xhat, dbias = sum of dy
  // (LayerNormParamGrad.h): column chunks, rows in order; the columns split
  // across the rank's threads.
  (void)parallelFor(0, size, rowGrain(rows), [&](int64_t firstColumn, int64_t endColumn) {
    LayerNormParamGrad<T> sums[kColumns];
    for (int64_t c0 = firstColumn; c0 < endColumn; c0 += kColumns) {
      const int64_t width = std::min(kColumns, endColumn - c0);
      std::fill(sums, sums + width, LayerNormParamGrad<T>{});
      for (int64_t r = 0; r < rows; ++r) {
        C mu, inv;
        stats(r, mu, inv);
        const T *xr = xData + r * size + c0, *gr = dyData + r * size + c0;
        runWide([&] {
          for (int64_t j = 0; j < width; ++j)
            sums[j].add(load(xr + j), load(gr + j), mu, inv);
        });
      }
      for (int64_t j = 0; j < width; ++j) {
        store(dscale.as<T>() + c0 + j, sums[j].scaleGrad());
        store(dbias.as<T>() + c0 + j, sums[j].biasGrad());
      }
    }
  });
}

// --- Gather ----------------------------------------------------------------------------

template <typename T, typename I>
Status gatherGradTyped(const TensorRef &indices, const TensorRef &dy, int ax,
                       const TensorRef &ddata) {
  using C = ComputeType<T>;
  const I *idx = indices.as<const I>();
  const int64_t count = indices.numElements(), dim = ddata.dims[ax];
  for (int64_t j = 0; j < count; ++j) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim)
      return Status::error(cat("gather_grad: index ", v, " (at position ", j,
                               " of the indices) is out of range for dimension ", ax,
                               " of size ", dim));
  }
  const int64_t outer = dimProduct(ddata, 0, ax), inner = dimProduct(ddata, ax + 1, ddata.rank);
  if (dy.numElements() != outer * count * inner)
    return Status::error(cat("gather_grad: dy has ", dy.numElements(), " elements, expected ",
                             outer * count * inner));
  if (ddata.byteSize() > 0)
    std::memset(ddata.data, 0, ddata.byteSize());
  const T *src = dy.as<const T>();
  T *dst = ddata.as<T>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < count; ++j) {
      const int64_t v = static_cast<int64_t>(idx[j]);
      T *row = dst + (o * dim + (v < 0 ? v + dim : v)) * inner;
      const T *g = src + (o * count + j) * inner;
      for (int64_t k = 0; k < inner; ++k)
        store(row + k, static_cast<C>(load(row + k) + load(g + k)));
    }
  return Status::ok();
}

// --- Reduce max --------------------------------------------------------------------------

template <typename T>
void reduceMaxGradImpl(const TensorRef &x, const TensorRef &y, const TensorRef &dy,
                       const StridedLayout<1> &kept, const StridedLayout<1> &reduced,
                       const TensorRef &dx) {
  using C = ComputeType<T>;
  const T *xData = x.as<const T>(), *yData = y.as<const T>(), *gData = dy.as<const T>();
  T *dxData = dx.as<T>();
  int64_t o = 0; // the kept position: y's and dy's element index
  forEachRow(kept, [&](const int64_t *keptOffset, int64_t keptCount, const int64_t *keptStep) {
    for (int64_t k = 0; k < keptCount; ++k, ++o) {
      const int64_t base = keptOffset[0] + k * keptStep[0];
      const C max = load(yData + o);
      int64_t ties = 0;
      forEachRow(reduced, [&](const int64_t *off, int64_t n, const int64_t *step) {
        for (int64_t i = 0; i < n; ++i)
          ties += load(xData + base + off[0] + i * step[0]) == max;
      });
      // torch: (grad / count) * mask; count is at least 1 unless the max is NaN.
      const C share = load(gData + o) / static_cast<C>(ties);
      forEachRow(reduced, [&](const int64_t *off, int64_t n, const int64_t *step) {
        for (int64_t i = 0; i < n; ++i) {
          const int64_t at = base + off[0] + i * step[0];
          store(dxData + at, load(xData + at) == max ? share : C(0));
        }
      });
    }
  });
}

} // namespace

Status activationGrad(ActivationGradKind kind, const TensorRef &saved, const TensorRef &dy,
                      const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireSameType("activation_grad", saved, dy));
  FSDP_RETURN_IF_ERROR(requireSameType("activation_grad", dy, dx));
  return dispatchFloat(
      dx.dtype, [&](auto tag) { activationGradTyped<decltype(tag)>(kind, saved, dy, dx); },
      "activation_grad");
}

Status softmaxGrad(const TensorRef &y, const TensorRef &dy, int64_t axis, bool log,
                   const TensorRef &dx) {
  const char *op = log ? "log_softmax_grad" : "softmax_grad";
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis(op, y, axis, split));
  FSDP_RETURN_IF_ERROR(requireSameType(op, y, dy));
  FSDP_RETURN_IF_ERROR(requireSameType(op, dy, dx));
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  return dispatchFloat(
      y.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        softmaxGradImpl(y.as<const T>(), dy.as<const T>(), dx.as<T>(), outer, len, inner, log);
      },
      op);
}

Status layerNormGrad(const TensorRef &x, const TensorRef &scale, const TensorRef &mean,
                     const TensorRef &invStdDev, const TensorRef &dy, int64_t axis,
                     const TensorRef &dx, const TensorRef &dscale, const TensorRef &dbias) {
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("layer_norm_grad", x, axis, split));
  const int64_t rows = split.outer, size = split.len * split.inner;
  FSDP_RETURN_IF_ERROR(requireSameType("layer_norm_grad", x, dy));
  FSDP_RETURN_IF_ERROR(requireSameType("layer_norm_grad", x, dx));
  FSDP_RETURN_IF_ERROR(requireSameType("layer_norm_grad", scale, dscale));
  FSDP_RETURN_IF_ERROR(requireSameType("layer_norm_grad", scale, dbias));
  FSDP_RETURN_IF_ERROR(requireSameType("layer_norm_grad", mean, invStdDev));
  if (scale.dtype != x.dtype || scale.numElements() != size)
    return Status::error(cat("layer_norm_grad: scale must be ", dtypeName(x.dtype), " with ", size,
                             " elements (the normalized dims)"));
  if (mean.numElements() != rows)
    return Status::error(cat("layer_norm_grad: mean must have ", rows, " elements"));
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        return dispatchFloat(
            mean.dtype,
            [&](auto statTag) {
              layerNormGradImpl<decltype(tag), decltype(statTag)>(
                  x, scale, mean, invStdDev, dy, rows, size, dx, dscale, dbias);
            },
            "layer_norm_grad statistics");
      },
      "layer_norm_grad");
}

Status gatherGrad(const TensorRef &indices, const TensorRef &dy, int64_t axis,
                  const TensorRef &ddata) {
  const int64_t ax = axis < 0 ? axis + ddata.rank : axis;
  if (ax < 0 || ax >= ddata.rank)
    return Status::error(cat("gather_grad: axis ", axis, " is outside the rank ", ddata.rank));
  if (dy.dtype != ddata.dtype)
    return Status::error("gather_grad: dy must have the result's element type");
  return dispatchFloat(
      ddata.dtype,
      [&](auto tag) {
        return dispatchIndex(
            indices.dtype,
            [&](auto indexTag) {
              return gatherGradTyped<decltype(tag), decltype(indexTag)>(
                  indices, dy, static_cast<int>(ax), ddata);
            },
            "gather_grad indices");
      },
      "gather_grad");
}

Status sliceGrad(const TensorRef &dy, const int64_t *starts, const int64_t *steps,
                 const TensorRef &dx) {
  if (dy.dtype != dx.dtype || dy.rank != dx.rank)
    return Status::error("slice_grad: dy must have the result's element type and rank");
  if (dx.byteSize() > 0)
    std::memset(dx.data, 0, dx.byteSize());
  if (dy.numElements() == 0)
    return Status::ok();
  // The slice kernel's layout with the roles swapped: dx is the strided
  // whole (operand 0, written), dy the contiguous part. Every position
  // must lie inside dx.
  for (int d = 0; d < dy.rank; ++d) {
    const int64_t last = starts[d] + (dy.dims[d] - 1) * steps[d];
    if (starts[d] < 0 || starts[d] >= dx.dims[d] || last < 0 || last >= dx.dims[d])
      return Status::error(cat("slice_grad: dim ", d, " writes positions ", starts[d], " to ",
                               last, " of ", dx.dims[d]));
  }
  StridedLayout<2> layout = sliceLayout(dy, dx, starts, steps, /*wholeOperand=*/0);
  return dispatchBySize(
      dx.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        U *dst = dx.as<U>();
        const U *src = dy.as<const U>();
        forEachRow(layout, [&](const int64_t *off, int64_t n, const int64_t *s) {
          for (int64_t i = 0; i < n; ++i)
            dst[off[0] + i * s[0]] = src[off[1] + i * s[1]];
        });
      },
      "slice_grad");
}

Status reduceMaxGrad(const TensorRef &x, const TensorRef &y, const TensorRef &dy,
                     const int64_t *axes, int count, const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireSameType("reduce_max_grad", x, dx));
  FSDP_RETURN_IF_ERROR(requireSameType("reduce_max_grad", y, dy));
  if (y.dtype != x.dtype)
    return Status::error("reduce_max_grad: y must have x's element type");
  ReductionSpace space;
  FSDP_RETURN_IF_ERROR(
      reductionSpace("reduce_max_grad", x, axes, count, y.numElements(), space));
  const StridedLayout<1> &kept = space.kept, &red = space.reduced;
  if (x.numElements() == 0)
    return Status::ok();
  return dispatchFloat(
      x.dtype, [&](auto tag) { reduceMaxGradImpl<decltype(tag)>(x, y, dy, kept, red, dx); },
      "reduce_max_grad");
}

Status dropoutGrad(const TensorRef &dy, const TensorRef &mask, float ratio, const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireSameType("dropout_grad", dy, dx));
  if (mask.dtype != DType::Bool || mask.numElements() != dy.numElements())
    return Status::error("dropout_grad: mask must be a bool tensor of dy's shape");
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Status::error(cat("dropout_grad: ratio ", ratio, " is outside [0, 1)"));
  const uint8_t *keep = mask.as<const uint8_t>();
  return dispatchFloat(
      dy.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        // DropoutKernels.cpp's scale and product with the mask (dy * 0 for a
        // dropped element, as torch's grad * mask * scale).
        const C scale = C(1) / (C(1) - static_cast<C>(ratio));
        const T *g = dy.as<const T>();
        T *o = dx.as<T>();
        (void)parallelFor(0, dy.numElements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          for (int64_t i = begin; i < end; ++i)
            store(o + i, load(g + i) * (keep[i] ? scale : C(0)));
        });
      },
      "dropout_grad");
}

} // namespace fsdp::rt::cpu
