//===- TorchExportKernels.cpp - the CPU kernels of torch 2.x export ops --===//
//
// Float unary math (GELU in both of torch's forms, reciprocal, cos, sin,
// ONNX softplus) and GELU's gradient, one vectorizable loop each over the
// scalar formulas of Activations.h; and three data-movement kernels that
// only move element bytes, so they serve every dtype by element size: a
// constant pad (fill, then copy input rows into place), tile (each output
// row is an input row repeated) and a cumulative sum, which accumulates
// floats in double and integers in wrapping 64-bit arithmetic as torch's
// CPU cumsum does, in a fixed order (deterministic, thread-independent).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/OperandChecks.h"
#include "runtime/math/CumulativeSum.h"
#include "runtime/math/Activations.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <cmath>
#include <cstring>

namespace fsdp::rt::cpu {
namespace {

const char *mathName(MathKind kind) {
  static const char *names[] = {"gelu", "gelu", "reciprocal", "cos", "sin", "softplus"};
  return names[static_cast<int>(kind)];
}

template <typename T> void mathTyped(MathKind kind, const TensorRef &in, const TensorRef &out) {
  using C = ComputeType<T>;
  switch (kind) {
  case MathKind::Gelu: mapUnary<T>(in, out, [](C x) { return geluOf(x); }); break;
  case MathKind::GeluTanh: mapUnary<T>(in, out, [](C x) { return geluTanhOf(x); }); break;
  case MathKind::Reciprocal: mapUnary<T>(in, out, [](C x) { return C(1) / x; }); break;
  case MathKind::Cos: mapUnary<T>(in, out, [](C x) { return std::cos(x); }); break;
  case MathKind::Sin: mapUnary<T>(in, out, [](C x) { return std::sin(x); }); break;
  case MathKind::Softplus: mapUnary<T>(in, out, [](C x) { return softplusOf(x); }); break;
  }
}

/// Calls row(index) for every multi-index over dims [0, rank - 1) of `t`
/// in row-major order (once, with no index, for rank <= 1).
template <typename Fn> void forEachOuter(const TensorRef &t, Fn row) {
  int64_t index[kMaxRank] = {};
  int outer = t.rank > 0 ? t.rank - 1 : 0;
  for (int i = 0; i < outer; ++i)
    if (t.dims[i] == 0)
      return;
  while (true) {
    row(index);
    int d = outer - 1;
    while (d >= 0 && ++index[d] == t.dims[d])
      index[d--] = 0;
    if (d < 0)
      return;
  }
}

template <typename U>
void padTyped(const TensorRef &in, const TensorRef &value, const int64_t *pads,
              const TensorRef &out) {
  U *o = out.as<U>();
  const U *x = in.as<const U>();
  const U fill = *value.as<const U>();
  std::fill(o, o + out.numElements(), fill);
  if (in.numElements() == 0)
    return;
  int64_t outStrides[kMaxRank];
  contiguousStrides(out, outStrides);
  const int64_t rowLen = in.rank ? in.dims[in.rank - 1] : 1;
  int64_t base = 0;
  for (int i = 0; i < in.rank; ++i)
    base += pads[i] * outStrides[i];
  const U *src = x;
  forEachOuter(in, [&](const int64_t *index) {
    int64_t offset = base;
    for (int i = 0; i + 1 < in.rank; ++i)
      offset += index[i] * outStrides[i];
    std::memcpy(o + offset, src, rowLen * sizeof(U));
    src += rowLen;
  });
}

template <typename U> void tileTyped(const TensorRef &in, const TensorRef &out) {
  U *o = out.as<U>();
  const U *x = in.as<const U>();
  if (in.rank == 0) {
    o[0] = x[0];
    return;
  }
  int64_t inStrides[kMaxRank];
  contiguousStrides(in, inStrides);
  const int64_t inRow = in.dims[in.rank - 1], outRow = out.dims[out.rank - 1];
  forEachOuter(out, [&](const int64_t *index) {
    int64_t offset = 0;
    for (int i = 0; i + 1 < in.rank; ++i)
      offset += (index[i] % in.dims[i]) * inStrides[i];
    for (int64_t j = 0; j < outRow; j += inRow)
      std::memcpy(o + j, x + offset, inRow * sizeof(U));
    o += outRow;
  });
}

/// Every line, in order (CumulativeSum.h).
template <typename T>
void cumsumTyped(const TensorRef &in, const AxisSplit &split, bool exclusive, bool reverse,
                 const TensorRef &out) {
  const T *x = in.as<const T>();
  T *o = out.as<T>();
  for (int64_t line = 0; line < split.outer * split.inner; ++line)
    cumsumLine(x, o, line, split.len, split.inner, exclusive, reverse);
}

} // namespace

Status math(MathKind kind, const TensorRef &in, const TensorRef &out) {
  const char *op = mathName(kind);
  FSDP_RETURN_IF_ERROR(requireLike(op, out, in));
  return dispatchFloat(
      in.dtype, [&](auto tag) { mathTyped<decltype(tag)>(kind, in, out); }, op);
}

Status geluGrad(bool tanh, const TensorRef &x, const TensorRef &dy, const TensorRef &dx) {
  FSDP_RETURN_IF_ERROR(requireLike("gelu_grad", dy, x));
  FSDP_RETURN_IF_ERROR(requireLike("gelu_grad", dx, x));
  return dispatchFloat(
      x.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        using C = ComputeType<T>;
        const T *px = x.as<const T>(), *pg = dy.as<const T>();
        T *pd = dx.as<T>();
        (void)parallelFor(0, x.numElements(), kElementwiseGrain, [&](int64_t begin, int64_t end) {
          if (tanh)
            runWide([&] {
              for (int64_t i = begin; i < end; ++i)
                store(pd + i, geluTanhGradOf<C>(load(px + i), load(pg + i)));
            });
          else
            runWide([&] {
              for (int64_t i = begin; i < end; ++i)
                store(pd + i, geluGradOf<C>(load(px + i), load(pg + i)));
            });
        });
      },
      "gelu_grad");
}

Status pad(const TensorRef &in, const TensorRef &value, const int64_t *pads, const TensorRef &out) {
  if (value.dtype != in.dtype || value.numElements() != 1 || out.dtype != in.dtype ||
      out.rank != in.rank)
    return Status::error(cat("pad: operands ", shapeText(in), ", value ", shapeText(value),
                             " and result ", shapeText(out), " do not fit"));
  for (int i = 0; i < in.rank; ++i)
    if (pads[i] < 0 || pads[in.rank + i] < 0 ||
        in.dims[i] + pads[i] + pads[in.rank + i] != out.dims[i])
      return Status::error(cat("pad: pads of dimension ", i, " (", pads[i], ", ",
                               pads[in.rank + i], ") do not take ", shapeText(in), " to ",
                               shapeText(out)));
  return dispatchBySize(
      in.dtype, [&](auto unit) { padTyped<decltype(unit)>(in, value, pads, out); }, "pad");
}

Status tile(const TensorRef &in, const TensorRef &out) {
  if (out.dtype != in.dtype || out.rank != in.rank)
    return Status::error(cat("tile: result ", shapeText(out), " does not fit ", shapeText(in)));
  for (int i = 0; i < in.rank; ++i)
    if (in.dims[i] == 0 ? out.dims[i] != 0 : out.dims[i] % in.dims[i] != 0)
      return Status::error(cat("tile: result ", shapeText(out), " is not a tiling of ",
                               shapeText(in)));
  if (out.numElements() == 0)
    return Status::ok();
  return dispatchBySize(in.dtype, [&](auto unit) { tileTyped<decltype(unit)>(in, out); }, "tile");
}

Status cumsum(const TensorRef &in, int64_t axis, bool exclusive, bool reverse,
              const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireLike("cumsum", out, in));
  AxisSplit split;
  FSDP_RETURN_IF_ERROR(splitAtAxis("cumsum", in, axis, split));
  if (in.numElements() == 0)
    return Status::ok();
  return dispatchNumeric(
      in.dtype, [&](auto tag) { cumsumTyped<decltype(tag)>(in, split, exclusive, reverse, out); },
      "cumsum");
}

} // namespace fsdp::rt::cpu
