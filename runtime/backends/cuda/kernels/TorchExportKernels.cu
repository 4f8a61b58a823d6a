//===- TorchExportKernels.cu - math and data movement of torch 2.x exports --===//
//
// The ops torch 2.x exports add (CpuKernels.h documents them): GELU (both
// forms) and its gradient, reciprocal, softplus, cos and sin with the CPU's
// scalar code (runtime/math/Activations.h; cos, sin and softplus's log1p
// are each machine's library, within an ulp); constant pad and tile, which
// compute each output element's source; and cumsum, one thread per line
// along the axis adding in the CPU's order and precision (double for
// floats, wrapping 64-bit for integers), so its results are the CPU's bits.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/backends/OperandChecks.h"
#include "runtime/math/CumulativeSum.h"
#include "runtime/math/Activations.h"

#include <cmath>
#include <type_traits>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

/// Pad's leading and trailing counts per dim (a kernel parameter).
struct PadOffsets {
  int64_t before[kMaxRank], after[kMaxRank];
};

const char *mathName(MathKind kind) {
  static const char *const names[] = {"gelu", "gelu", "reciprocal", "cos", "sin", "softplus"};
  return names[static_cast<int>(kind)];
}

template <MathKind Kind, typename T> __global__ void mathKernel(const T *in, T *out, int64_t n) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(i, n) {
    const C x = load(in + i);
    C r;
    if constexpr (Kind == MathKind::Gelu)
      r = geluOf(x);
    else if constexpr (Kind == MathKind::GeluTanh)
      r = geluTanhOf(x);
    else if constexpr (Kind == MathKind::Reciprocal)
      r = C(1) / x;
    else if constexpr (Kind == MathKind::Cos)
      r = std::cos(x);
    else if constexpr (Kind == MathKind::Sin)
      r = std::sin(x);
    else
      r = softplusOf(x);
    store(out + i, r);
  }
}

template <typename T>
__global__ void geluGradKernel(const T *x, const T *dy, T *dx, int64_t n, bool tanh) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(i, n) {
    const C v = load(x + i), g = load(dy + i);
    store(dx + i, tanh ? geluTanhGradOf<C>(v, g) : geluGradOf<C>(v, g));
  }
}

/// Output element e of a constant pad: the input's element, or `fill`.
template <typename U>
__global__ void padKernel(const U *in, const U *value, U *out, TensorRef shape, int64_t n,
                          PadOffsets pads) {
  const U fill = *value;
  FSDP_GRID_STRIDE(e, n) {
    int64_t rest = e, src = 0, stride = 1;
    bool inside = true;
    for (int d = shape.rank - 1; d >= 0; --d) {
      const int64_t outDim = shape.dims[d] + pads.before[d] + pads.after[d];
      const int64_t i = rest % outDim - pads.before[d];
      rest /= outDim;
      inside = inside && i >= 0 && i < shape.dims[d];
      src += i * stride;
      stride *= shape.dims[d];
    }
    out[e] = inside ? in[src] : fill;
  }
}

template <typename U>
__global__ void tileKernel(const U *in, U *out, TensorRef inShape, TensorRef outShape, int64_t n) {
  FSDP_GRID_STRIDE(e, n) {
    int64_t rest = e, src = 0, stride = 1;
    for (int d = outShape.rank - 1; d >= 0; --d) {
      const int64_t i = rest % outShape.dims[d];
      rest /= outShape.dims[d];
      src += (i % inShape.dims[d]) * stride;
      stride *= inShape.dims[d];
    }
    out[e] = in[src];
  }
}

template <typename T>
__global__ void cumsumKernel(const T *x, T *o, int64_t outer, int64_t len, int64_t inner,
                             bool exclusive, bool reverse) {
  FSDP_GRID_STRIDE(line, outer * inner) {
    cumsumLine(x, o, line, len, inner, exclusive, reverse);
  }
}

} // namespace

Status math(const KernelContext &ctx, MathKind kind, const TensorRef &in, const TensorRef &out) {
  const char *op = mathName(kind);
  FSDP_RETURN_IF_ERROR(requireLike(op, out, in));
  const int64_t n = in.numElements();
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        auto run = [&](auto kernel) {
          return launchElementwise(ctx, op, n, kernel, in.as<const T>(), out.as<T>(), n);
        };
        switch (kind) {
        case MathKind::Gelu: return run(mathKernel<MathKind::Gelu, T>);
        case MathKind::GeluTanh: return run(mathKernel<MathKind::GeluTanh, T>);
        case MathKind::Reciprocal: return run(mathKernel<MathKind::Reciprocal, T>);
        case MathKind::Cos: return run(mathKernel<MathKind::Cos, T>);
        case MathKind::Sin: return run(mathKernel<MathKind::Sin, T>);
        case MathKind::Softplus: return run(mathKernel<MathKind::Softplus, T>);
        }
        return Status::error(cat(op, ": unknown kind"));
      },
      op);
}

Status geluGrad(const KernelContext &ctx, bool tanh, const TensorRef &x, const TensorRef &dy,
                const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireLike("gelu_grad", dy, x));
  FSDP_RETURN_IF_ERROR(requireLike("gelu_grad", dx, x));
  const int64_t n = x.numElements();
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, "gelu_grad", n, geluGradKernel<T>, x.as<const T>(),
                                 dy.as<const T>(), dx.as<T>(), n, tanh);
      },
      "gelu_grad");
}

Status pad(const KernelContext &ctx, const TensorRef &in, const TensorRef &value,
           const int64_t *pads, const TensorRef &out) {
  if (value.dtype != in.dtype || value.numElements() != 1 || out.dtype != in.dtype ||
      out.rank != in.rank)
    return Status::error(cat("pad: operands ", shapeText(in), ", value ", shapeText(value),
                             " and result ", shapeText(out), " do not fit"));
  PadOffsets offsets{};
  for (int i = 0; i < in.rank; ++i) {
    if (pads[i] < 0 || pads[in.rank + i] < 0 ||
        in.dims[i] + pads[i] + pads[in.rank + i] != out.dims[i])
      return Status::error(cat("pad: pads of dimension ", i, " (", pads[i], ", ",
                               pads[in.rank + i], ") do not take ", shapeText(in), " to ",
                               shapeText(out)));
    offsets.before[i] = pads[i];
    offsets.after[i] = pads[in.rank + i];
  }
  const int64_t n = out.numElements();
  TensorRef shape = in;
  shape.data = nullptr;
  return dispatchBySize(
      in.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, "pad", n, padKernel<U>, in.as<const U>(),
                                 value.as<const U>(), out.as<U>(), shape, n, offsets);
      },
      "pad");
}

Status tile(const KernelContext &ctx, const TensorRef &in, const TensorRef &out) {
  if (out.dtype != in.dtype || out.rank != in.rank)
    return Status::error(cat("tile: result ", shapeText(out), " does not fit ", shapeText(in)));
  for (int i = 0; i < in.rank; ++i)
    if (in.dims[i] == 0 ? out.dims[i] != 0 : out.dims[i] % in.dims[i] != 0)
      return Status::error(cat("tile: result ", shapeText(out), " is not a tiling of ",
                               shapeText(in)));
  const int64_t n = out.numElements();
  if (n == 0)
    return Status::ok();
  TensorRef inShape = in, outShape = out;
  inShape.data = outShape.data = nullptr;
  return dispatchBySize(
      in.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, "tile", n, tileKernel<U>, in.as<const U>(), out.as<U>(),
                                 inShape, outShape, n);
      },
      "tile");
}

Status cumsum(const KernelContext &ctx, const TensorRef &in, int64_t axis, bool exclusive,
              bool reverse, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireLike("cumsum", out, in));
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("cumsum", in, axis, split));
  if (in.numElements() == 0)
    return Status::ok();
  const int64_t outer = split.outer, len = split.len, inner = split.inner;
  return dispatchNumeric(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, "cumsum", outer * inner, cumsumKernel<T>, in.as<const T>(),
                                 out.as<T>(), outer, len, inner, exclusive, reverse);
      },
      "cumsum");
}

FSDP_CUDA_NAMESPACE_END
