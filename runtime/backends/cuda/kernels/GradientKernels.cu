//===- GradientKernels.cu - backward kernels on the GPU --------------------===//
//
// The gradient kernels of CudaKernels.h other than the losses', each in the
// CPU kernel's order of operations (GradientKernels.cpp), so results are
// the CPU's bits, except f64's exp (erf's and log-softmax's gradients):
// glibc on the CPU, libdevice here, within an ulp:
// - activation and dropout gradients: one thread per element with the
//   shared scalar code (runtime/math/Activations.h);
// - softmax and layer norm: row sums in double folded by a 16-thread
//   segment in the CPU's 16-lane order (LaneFold.cuh); sums down columns
//   (a middle softmax axis; layer norm's dscale and dbias over rows,
//   LayerNormParamGrad.h) by one thread per column in row order, as the
//   CPU adds them;
// - gather's adjoint: the result is zeroed, then one thread per (outer,
//   inner) column walks the indices in order and adds dy's slices into the
//   rows they name: each element receives its terms in the CPU's order and
//   no two threads touch one element, so no atomics; an index out of range
//   is an IndexOutOfRange fault (a thread per index checks them all, even
//   when dy is empty, as the CPU does) and adds nothing;
// - slice's adjoint: zero, then dy written at the sliced positions;
// - reduce-max's adjoint: one thread per kept position counts the ties and
//   shares dy among them.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/LaneFold.cuh"
#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/ReductionSpace.h"
#include "runtime/math/Activations.h"
#include "runtime/math/LayerNormParamGrad.h"

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

// --- Elementwise -------------------------------------------------------------------

template <ActivationGradKind Kind, typename T>
__global__ void activationGradKernel(const T *saved, const T *dy, T *dx, int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    const auto s = load(saved + i), g = load(dy + i);
    decltype(s + g) r;
    if constexpr (Kind == ActivationGradKind::Relu)
      r = reluGradOf(s, g);
    else if constexpr (Kind == ActivationGradKind::Erf)
      r = erfGradOf(s, g);
    else if constexpr (Kind == ActivationGradKind::Tanh)
      r = tanhGradOf(s, g);
    else
      r = sigmoidGradOf(s, g);
    store(dx + i, r);
  }
}

template <typename T>
__global__ void dropoutGradKernel(const T *dy, const uint8_t *keep, T *dx, float ratio,
                                  int64_t n) {
  using C = ComputeType<T>;
  const C scale = C(1) / (C(1) - static_cast<C>(ratio));
  FSDP_GRID_STRIDE(i, n) { store(dx + i, load(dy + i) * (keep[i] ? scale : C(0))); }
}

template <typename U> __global__ void zeroKernel(U *out, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { out[i] = U(0); }
}

// --- Softmax -------------------------------------------------------------------------

template <typename C> __device__ inline double softmaxTerm(C y, C g, bool log) {
  return log ? static_cast<double>(g) : static_cast<double>(g * y);
}
template <typename C> __device__ inline C softmaxGradValue(C y, C g, C sum, bool log) {
  return log ? g - expOf(y) * sum : y * (g - sum);
}

template <typename T>
__global__ void softmaxGradRowsKernel(const T *y, const T *dy, T *dx, int64_t rows, int64_t len,
                                      bool log) {
  using C = ComputeType<T>;
  FSDP_SEGMENT_LOOP(row, active, lane, rows) {
    const int64_t n = active ? len : 0;
    const T *yr = y + row * len, *gr = dy + row * len;
    const C sum = static_cast<C>(laneFold(
        lane, n, 0.0, [&](int64_t i) { return softmaxTerm(load(yr + i), load(gr + i), log); },
        Plus{}));
    for (int64_t i = lane; i < n; i += kFoldLanes)
      store(dx + row * len + i, softmaxGradValue(load(yr + i), load(gr + i), sum, log));
  }
}

template <typename T>
__global__ void softmaxGradColumnsKernel(const T *y, const T *dy, T *dx, int64_t outer,
                                         int64_t len, int64_t inner, bool log) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(column, outer * inner) {
    const int64_t base = (column / inner) * len * inner + column % inner;
    double sum = 0;
    for (int64_t i = 0; i < len; ++i)
      sum += softmaxTerm(load(y + base + i * inner), load(dy + base + i * inner), log);
    for (int64_t i = 0; i < len; ++i) {
      const int64_t at = base + i * inner;
      store(dx + at, softmaxGradValue(load(y + at), load(dy + at), static_cast<C>(sum), log));
    }
  }
}

// --- Layer norm ------------------------------------------------------------------------

template <typename T, typename U>
__global__ void layerNormGradRowsKernel(const T *x, const T *scale, const U *mean,
                                        const U *invStdDev, const T *dy, T *dx, int64_t rows,
                                        int64_t size) {
  using C = ComputeType<T>;
  FSDP_SEGMENT_LOOP(r, active, lane, rows) {
    const int64_t n = active ? size : 0;
    const C mu = active ? static_cast<C>(load(mean + r)) : C(0);
    const C inv = active ? static_cast<C>(load(invStdDev + r)) : C(0);
    const T *xr = x + r * size, *gr = dy + r * size;
    auto g = [&](int64_t i) { return load(gr + i) * load(scale + i); };
    auto xhat = [&](int64_t i) { return (load(xr + i) - mu) * inv; };
    const double sumG =
        laneFold(lane, n, 0.0, [&](int64_t i) { return static_cast<double>(g(i)); }, Plus{});
    const double sumGX = laneFold(
        lane, n, 0.0, [&](int64_t i) { return static_cast<double>(g(i) * xhat(i)); }, Plus{});
    const C meanG = static_cast<C>(sumG / static_cast<double>(size));
    const C meanGX = static_cast<C>(sumGX / static_cast<double>(size));
    for (int64_t i = lane; i < n; i += kFoldLanes)
      store(dx + r * size + i, inv * (g(i) - meanG - xhat(i) * meanGX));
  }
}

template <typename T, typename U>
__global__ void layerNormGradColumnsKernel(const T *x, const U *mean, const U *invStdDev,
                                           const T *dy, T *dscale, T *dbias, int64_t rows,
                                           int64_t size) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(j, size) {
    LayerNormParamGrad<T> sums;
    for (int64_t r = 0; r < rows; ++r) {
      const C mu = static_cast<C>(load(mean + r)), inv = static_cast<C>(load(invStdDev + r));
      sums.add(load(x + r * size + j), load(dy + r * size + j), mu, inv);
    }
    store(dscale + j, sums.scaleGrad());
    store(dbias + j, sums.biasGrad());
  }
}

// --- Gather, slice, reduce max ------------------------------------------------------------

/// A thread per (outer, inner) column; indices out of range (faulted by
/// checkIndicesKernel) add nothing.
template <typename T, typename I>
__global__ void gatherGradKernel(const I *idx, const T *dy, T *ddata, int64_t outer, int64_t count,
                                 int64_t dim, int64_t inner) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(column, outer * inner) {
    const int64_t o = column / inner, k = column % inner;
    for (int64_t j = 0; j < count; ++j) {
      const int64_t v = static_cast<int64_t>(idx[j]);
      if (v < -dim || v >= dim)
        continue;
      T *at = ddata + (o * dim + (v < 0 ? v + dim : v)) * inner + k;
      store(at, static_cast<C>(load(at) + load(dy + (o * count + j) * inner + k)));
    }
  }
}

template <typename U>
__global__ void scatterKernel(U *dst, const U *src, StridedLayout<2> layout, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { dst[layout.offset(0, i)] = src[layout.offset(1, i)]; }
}

template <typename T>
__global__ void reduceMaxGradKernel(const T *x, const T *y, const T *dy, T *dx,
                                    StridedLayout<1> kept, StridedLayout<1> reduced,
                                    int64_t outputs) {
  using C = ComputeType<T>;
  const int64_t terms = reduced.numElements();
  FSDP_GRID_STRIDE(o, outputs) {
    const int64_t base = kept.offset(0, o);
    const C max = load(y + o);
    int64_t ties = 0;
    for (int64_t t = 0; t < terms; ++t)
      ties += load(x + base + reduced.offset(0, t)) == max;
    // torch: (grad / count) * mask; count is at least 1 unless the max is NaN.
    const C share = load(dy + o) / static_cast<C>(ties);
    for (int64_t t = 0; t < terms; ++t) {
      const int64_t at = base + reduced.offset(0, t);
      store(dx + at, load(x + at) == max ? share : C(0));
    }
  }
}

/// Zeroes a tensor (bits: only the element size matters).
Status zero(const KernelContext &ctx, const char *op, const TensorRef &t) {
  const int64_t n = t.numElements();
  return dispatchBySize(
      t.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, op, n, zeroKernel<U>, t.as<U>(), n);
      },
      op);
}

} // namespace

Status activationGrad(const KernelContext &ctx, ActivationGradKind kind, const TensorRef &saved,
                      const TensorRef &dy, const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireSameType("activation_grad", saved, dy));
  FSDP_RETURN_IF_ERROR(requireSameType("activation_grad", dy, dx));
  const int64_t n = dx.numElements();
  return dispatchFloat(
      dx.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        auto run = [&](auto kernel) {
          return launchElementwise(ctx, "activation_grad", n, kernel, saved.as<const T>(),
                                   dy.as<const T>(), dx.as<T>(), n);
        };
        switch (kind) {
        case ActivationGradKind::Relu:
          return run(activationGradKernel<ActivationGradKind::Relu, T>);
        case ActivationGradKind::Erf: return run(activationGradKernel<ActivationGradKind::Erf, T>);
        case ActivationGradKind::Tanh:
          return run(activationGradKernel<ActivationGradKind::Tanh, T>);
        case ActivationGradKind::Sigmoid:
          return run(activationGradKernel<ActivationGradKind::Sigmoid, T>);
        }
        return Status::error("activation_grad: unknown kind");
      },
      "activation_grad");
}

Status softmaxGrad(const KernelContext &ctx, const TensorRef &y, const TensorRef &dy,
                   int64_t axis, bool log, const TensorRef &dx) {
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
        if (outer * len * inner == 0) // after the type check, as the CPU
          return Status::ok();
        if (inner == 1)
          return launch(ctx, op, softmaxGradRowsKernel<T>, gridForRows(outer),
                        dim3(kBlockThreads), y.as<const T>(), dy.as<const T>(), dx.as<T>(), outer,
                        len, log);
        return launchElementwise(ctx, op, outer * inner, softmaxGradColumnsKernel<T>,
                                 y.as<const T>(), dy.as<const T>(), dx.as<T>(), outer, len,
                                 inner, log);
      },
      op);
}

Status layerNormGrad(const KernelContext &ctx, const TensorRef &x, const TensorRef &scale,
                     const TensorRef &mean, const TensorRef &invStdDev, const TensorRef &dy,
                     int64_t axis, const TensorRef &dx, const TensorRef &dscale,
                     const TensorRef &dbias) {
  const char *op = "layer_norm_grad";
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("layer_norm_grad", x, axis, split));
  const int64_t rows = split.outer, size = split.len * split.inner;
  FSDP_RETURN_IF_ERROR(requireSameType(op, x, dy));
  FSDP_RETURN_IF_ERROR(requireSameType(op, x, dx));
  FSDP_RETURN_IF_ERROR(requireSameType(op, scale, dscale));
  FSDP_RETURN_IF_ERROR(requireSameType(op, scale, dbias));
  FSDP_RETURN_IF_ERROR(requireSameType(op, mean, invStdDev));
  if (scale.dtype != x.dtype || scale.numElements() != size)
    return Status::error(cat("layer_norm_grad: scale must be ", dtypeName(x.dtype), " with ", size,
                             " elements (the normalized dims)"));
  if (mean.numElements() != rows)
    return Status::error(cat("layer_norm_grad: mean must have ", rows, " elements"));
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return dispatchFloat(
            mean.dtype,
            [&](auto statTag) -> Status {
              using U = decltype(statTag);
              if (rows > 0)
                FSDP_RETURN_IF_ERROR(launch(ctx, op, layerNormGradRowsKernel<T, U>,
                                            gridForRows(rows), dim3(kBlockThreads),
                                            x.as<const T>(), scale.as<const T>(),
                                            mean.as<const U>(), invStdDev.as<const U>(),
                                            dy.as<const T>(), dx.as<T>(), rows, size));
              return launchElementwise(ctx, op, size, layerNormGradColumnsKernel<T, U>,
                                       x.as<const T>(), mean.as<const U>(),
                                       invStdDev.as<const U>(), dy.as<const T>(), dscale.as<T>(),
                                       dbias.as<T>(), rows, size);
            },
            "layer_norm_grad statistics");
      },
      op);
}

Status gatherGrad(const KernelContext &ctx, const TensorRef &indices, const TensorRef &dy,
                  int64_t axis, const TensorRef &ddata) {
  const int64_t ax = axis < 0 ? axis + ddata.rank : axis;
  if (ax < 0 || ax >= ddata.rank)
    return Status::error(cat("gather_grad: axis ", axis, " is outside the rank ", ddata.rank));
  if (dy.dtype != ddata.dtype)
    return Status::error("gather_grad: dy must have the result's element type");
  const int64_t count = indices.numElements(), dim = ddata.dims[ax];
  const int64_t outer = dimProduct(ddata, 0, static_cast<int>(ax)),
                inner = dimProduct(ddata, static_cast<int>(ax) + 1, ddata.rank);
  if (dy.numElements() != outer * count * inner)
    return Status::error(cat("gather_grad: dy has ", dy.numElements(), " elements, expected ",
                             outer * count * inner));
  return dispatchFloat(
      ddata.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return dispatchIndex(
            indices.dtype,
            [&](auto indexTag) -> Status {
              using I = decltype(indexTag);
              FSDP_RETURN_IF_ERROR(launchElementwise(ctx, "gather_grad", count,
                                                     checkIndicesKernel<I>, indices.as<const I>(),
                                                     count, dim, ctx.fault, ctx.launch));
              FSDP_RETURN_IF_ERROR(zero(ctx, "gather_grad", ddata));
              return launchElementwise(ctx, "gather_grad", outer * inner, gatherGradKernel<T, I>,
                                       indices.as<const I>(), dy.as<const T>(), ddata.as<T>(),
                                       outer, count, dim, inner);
            },
            "gather_grad indices");
      },
      "gather_grad");
}

Status sliceGrad(const KernelContext &ctx, const TensorRef &dy, const int64_t *starts,
                 const int64_t *steps, const TensorRef &dx) {
  if (dy.dtype != dx.dtype || dy.rank != dx.rank)
    return Status::error("slice_grad: dy must have the result's element type and rank");
  // The positions are attributes: checked here, before anything is written.
  if (dy.numElements() > 0)
    for (int d = 0; d < dy.rank; ++d) {
      const int64_t last = starts[d] + (dy.dims[d] - 1) * steps[d];
      if (starts[d] < 0 || starts[d] >= dx.dims[d] || last < 0 || last >= dx.dims[d])
        return Status::error(cat("slice_grad: dim ", d, " writes positions ", starts[d], " to ",
                                 last, " of ", dx.dims[d]));
    }
  FSDP_RETURN_IF_ERROR(zero(ctx, "slice_grad", dx));
  if (dy.numElements() == 0)
    return Status::ok();
  StridedLayout<2> layout = sliceLayout(dy, dx, starts, steps, /*wholeOperand=*/0);
  const int64_t n = dy.numElements();
  return dispatchBySize(
      dx.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, "slice_grad", n, scatterKernel<U>, dx.as<U>(),
                                 dy.as<const U>(), layout, n);
      },
      "slice_grad");
}

Status reduceMaxGrad(const KernelContext &ctx, const TensorRef &x, const TensorRef &y,
                     const TensorRef &dy, const int64_t *axes, int count, const TensorRef &dx) {
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
  const int64_t outputs = kept.numElements();
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, "reduce_max_grad", outputs, reduceMaxGradKernel<T>,
                                 x.as<const T>(), y.as<const T>(), dy.as<const T>(), dx.as<T>(),
                                 kept, red, outputs);
      },
      "reduce_max_grad");
}

Status dropoutGrad(const KernelContext &ctx, const TensorRef &dy, const TensorRef &mask,
                   float ratio, const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireSameType("dropout_grad", dy, dx));
  if (mask.dtype != DType::Bool || mask.numElements() != dy.numElements())
    return Status::error("dropout_grad: mask must be a bool tensor of dy's shape");
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Status::error(cat("dropout_grad: ratio ", ratio, " is outside [0, 1)"));
  const int64_t n = dy.numElements();
  return dispatchFloat(
      dy.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, "dropout_grad", n, dropoutGradKernel<T>, dy.as<const T>(),
                                 mask.as<const uint8_t>(), dx.as<T>(), ratio, n);
      },
      "dropout_grad");
}

FSDP_CUDA_NAMESPACE_END
