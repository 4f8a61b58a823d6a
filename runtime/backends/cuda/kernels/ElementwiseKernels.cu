//===- ElementwiseKernels.cu - binary, where, unary and cast on the GPU ----===//
//
// The elementwise family of CudaKernels.h: one thread per result element
// (grid-stride), operands located through the host-built StridedLayout
// (broadcast as numpy does) passed by value. The per-element semantics are
// runtime/math/ElementwiseOps.h and Activations.h, the CPU kernels' own
// code, so results are the CPU's bits except where a machine's math
// library is called (log and pow: glibc on the CPU, CUDA's libdevice
// here, both within an ulp or two). Integer division by zero, which the
// CPU refuses before writing, is a DivisionByZero fault here (the
// element is left unwritten; the step fails at its end).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/backends/OperandChecks.h"
#include "runtime/math/Activations.h"
#include "runtime/math/ElementwiseOps.h"

#include <cmath>
#include <type_traits>

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

// --- Kernels ----------------------------------------------------------------------------

template <BinaryKind Kind, typename T, typename E>
__global__ void binaryKernel(T *out, const T *a, const E *b, StridedLayout<3> layout, int64_t n,
                             bool scalarExponent, KernelFault *fault, uint32_t launchId) {
  using C = ComputeType<T>;
  FSDP_GRID_STRIDE(i, n) {
    C x = load(a + layout.offset(1, i));
    ComputeType<E> y = load(b + layout.offset(2, i));
    C r;
    if constexpr (Kind == BinaryKind::Add)
      r = addOp(x, y);
    else if constexpr (Kind == BinaryKind::Sub)
      r = subOp(x, y);
    else if constexpr (Kind == BinaryKind::Mul)
      r = mulOp(x, y);
    else if constexpr (Kind == BinaryKind::Max)
      r = maxOp(x, y);
    else if constexpr (Kind == BinaryKind::Min)
      r = minOp(x, y);
    else if constexpr (Kind == BinaryKind::Div) {
      if constexpr (kIsIntStorage<T>) {
        if (y == 0) {
          raiseFault(fault, launchId, FaultCode::DivisionByZero, 0, i, 0);
          continue;
        }
      }
      r = divOp(x, y);
    } else if constexpr (kIsFloatStorage<T> && std::is_same_v<T, E>) {
      // Pow: a one-element exponent of 2 squares, as the CPU computes it.
      r = scalarExponent && y == 2 ? x * x : powOp<T, E>(x, y);
    } else {
      r = powOp<T, E>(x, y);
    }
    store(out + layout.offset(0, i), r);
  }
}

/// torch's wrapped number (ElementwiseOps.h): `tensor` bf16/f16, `scalar`
/// one f32 element, the CPU's element rule Op.
template <WrappedScalarOp Op, typename T>
__global__ void wrappedScalarKernel(T *out, const T *tensor, const float *scalar,
                                    StridedLayout<3> layout, int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    store(out + layout.offset(0, i),
          wrappedScalarOf<Op, T>(load(tensor + layout.offset(1, i)), scalar[layout.offset(2, i)]));
  }
}

template <UnaryKind Kind, typename T>
__global__ void unaryKernel(T *out, const T *in, int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    auto x = load(in + i);
    decltype(x) r;
    if constexpr (Kind == UnaryKind::Neg)
      r = negOp(x);
    else if constexpr (Kind == UnaryKind::Relu)
      r = reluOf(x);
    else if constexpr (Kind == UnaryKind::Exp)
      r = expOf(x);
    else if constexpr (Kind == UnaryKind::Log)
      r = std::log(x);
    else if constexpr (Kind == UnaryKind::Sqrt)
      r = std::sqrt(x);
    else if constexpr (Kind == UnaryKind::Erf)
      r = erfOf(x);
    else if constexpr (Kind == UnaryKind::Tanh)
      r = tanhOf(x);
    else
      r = sigmoidOf(x);
    store(out + i, r);
  }
}

__global__ void notKernel(bool *out, const uint8_t *in, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { out[i] = in[i] == 0; }
}

/// Selection moves bits: U is the unsigned type of the element's size.
template <typename U>
__global__ void whereKernel(U *out, const uint8_t *cond, const U *x, const U *y,
                            StridedLayout<4> layout, int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    out[layout.offset(0, i)] =
        cond[layout.offset(1, i)] != 0 ? x[layout.offset(2, i)] : y[layout.offset(3, i)];
  }
}

template <typename To, typename From>
__global__ void castKernel(To *out, const From *in, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { out[i] = convert<To>(in[i]); }
}

template <typename U> __global__ void copyKernel(U *out, const U *in, int64_t n) {
  FSDP_GRID_STRIDE(i, n) { out[i] = in[i]; }
}

// --- Host side --------------------------------------------------------------------------

template <BinaryKind Kind, typename T, typename E>
Status launchBinary(const KernelContext &ctx, const TensorRef &a, const TensorRef &b,
                    const TensorRef &out, bool scalarExponent = false) {
  StridedLayout<3> layout = broadcastLayout<3>(out, {&a, &b});
  return launchElementwise(ctx, binaryName(Kind), out.numElements(), binaryKernel<Kind, T, E>,
                           out.as<T>(), a.as<const T>(), b.as<const E>(), layout,
                           out.numElements(), scalarExponent, ctx.fault, ctx.launch);
}

template <typename T>
Status binaryTyped(const KernelContext &ctx, BinaryKind kind, const TensorRef &a,
                   const TensorRef &b, const TensorRef &out) {
  switch (kind) {
  case BinaryKind::Add: return launchBinary<BinaryKind::Add, T, T>(ctx, a, b, out);
  case BinaryKind::Sub: return launchBinary<BinaryKind::Sub, T, T>(ctx, a, b, out);
  case BinaryKind::Mul: return launchBinary<BinaryKind::Mul, T, T>(ctx, a, b, out);
  case BinaryKind::Div: return launchBinary<BinaryKind::Div, T, T>(ctx, a, b, out);
  case BinaryKind::Max: return launchBinary<BinaryKind::Max, T, T>(ctx, a, b, out);
  case BinaryKind::Min: return launchBinary<BinaryKind::Min, T, T>(ctx, a, b, out);
  case BinaryKind::Pow: break; // the exponent has its own dtype: binary() below
  }
  return Status::ok();
}

template <typename T>
Status wrappedScalarTyped(const KernelContext &ctx, const char *name, WrappedScalarOp op,
                          const TensorRef &tensor, const TensorRef &scalar,
                          const TensorRef &out) {
  StridedLayout<3> layout = broadcastLayout<3>(out, {&tensor, &scalar});
  auto run = [&](auto opTag) {
    constexpr WrappedScalarOp Op = decltype(opTag)::value;
    return launchElementwise(ctx, name, out.numElements(), wrappedScalarKernel<Op, T>,
                             out.as<T>(), tensor.as<const T>(), scalar.as<const float>(), layout,
                             out.numElements());
  };
  return dispatchWrappedScalarOp(op, run);
}

template <UnaryKind Kind, typename T>
Status launchUnary(const KernelContext &ctx, const TensorRef &in, const TensorRef &out) {
  return launchElementwise(ctx, unaryName(Kind), in.numElements(), unaryKernel<Kind, T>,
                           out.as<T>(), in.as<const T>(), in.numElements());
}

template <typename T>
Status unaryTyped(const KernelContext &ctx, UnaryKind kind, const TensorRef &in,
                  const TensorRef &out) {
  using C = ComputeType<T>;
  // Neg and Relu take floats and signed integers; the rest only floats.
  if constexpr (kIsFloatStorage<T> || std::is_signed_v<C>) {
    if (kind == UnaryKind::Neg)
      return launchUnary<UnaryKind::Neg, T>(ctx, in, out);
    if (kind == UnaryKind::Relu)
      return launchUnary<UnaryKind::Relu, T>(ctx, in, out);
  }
  if constexpr (kIsFloatStorage<T>) {
    switch (kind) {
    case UnaryKind::Exp: return launchUnary<UnaryKind::Exp, T>(ctx, in, out);
    case UnaryKind::Log: return launchUnary<UnaryKind::Log, T>(ctx, in, out);
    case UnaryKind::Sqrt: return launchUnary<UnaryKind::Sqrt, T>(ctx, in, out);
    case UnaryKind::Erf: return launchUnary<UnaryKind::Erf, T>(ctx, in, out);
    case UnaryKind::Tanh: return launchUnary<UnaryKind::Tanh, T>(ctx, in, out);
    case UnaryKind::Sigmoid: return launchUnary<UnaryKind::Sigmoid, T>(ctx, in, out);
    default: break;
    }
  }
  return unsupportedDType(unaryName(kind), in.dtype);
}

} // namespace

Status binary(const KernelContext &ctx, BinaryKind kind, const TensorRef &a, const TensorRef &b,
              const TensorRef &out) {
  const char *op = binaryName(kind);
  if (std::optional<WrappedScalarMix> mix = wrappedScalarMix(kind, a, b, out)) {
    if (out.numElements() == 0)
      return Status::ok();
    return dispatch<bitOf(DType::F16) | bitOf(DType::BF16)>(
        out.dtype,
        [&](auto tag) {
          return wrappedScalarTyped<decltype(tag)>(ctx, op, mix->op, *mix->tensor, *mix->scalar,
                                                   out);
        },
        op);
  }
  FSDP_RETURN_IF_ERROR(requireDType(op, out, a.dtype));
  if (kind != BinaryKind::Pow)
    FSDP_RETURN_IF_ERROR(requireDType(op, b, a.dtype));
  if (out.numElements() == 0)
    return Status::ok();
  return dispatchNumeric(
      a.dtype,
      [&](auto base) -> Status {
        using T = decltype(base);
        if (kind != BinaryKind::Pow)
          return binaryTyped<T>(ctx, kind, a, b, out);
        return dispatchNumeric(
            b.dtype,
            [&](auto exponent) {
              using E = decltype(exponent);
              return launchBinary<BinaryKind::Pow, T, E>(ctx, a, b, out,
                                                          b.numElements() == 1);
            },
            op);
      },
      op);
}

Status where(const KernelContext &ctx, const TensorRef &cond, const TensorRef &x,
             const TensorRef &y, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireDType("where", cond, DType::Bool));
  FSDP_RETURN_IF_ERROR(requireDType("where", x, out.dtype));
  FSDP_RETURN_IF_ERROR(requireDType("where", y, out.dtype));
  const int64_t n = out.numElements();
  if (n == 0)
    return Status::ok();
  StridedLayout<4> layout = broadcastLayout<4>(out, {&cond, &x, &y});
  return dispatchBySize(
      out.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        return launchElementwise(ctx, "where", n, whereKernel<U>, out.as<U>(),
                                 cond.as<const uint8_t>(), x.as<const U>(), y.as<const U>(),
                                 layout, n);
      },
      "where");
}

Status unary(const KernelContext &ctx, UnaryKind kind, const TensorRef &in, const TensorRef &out) {
  const char *op = unaryName(kind);
  FSDP_RETURN_IF_ERROR(requireDType(op, out, in.dtype));
  if (kind == UnaryKind::Not) {
    FSDP_RETURN_IF_ERROR(requireDType(op, in, DType::Bool));
    return launchElementwise(ctx, op, in.numElements(), notKernel, out.as<bool>(),
                             in.as<const uint8_t>(), in.numElements());
  }
  return dispatch<kFloatTypes | kSignedIntTypes>(
      in.dtype, [&](auto t) { return unaryTyped<decltype(t)>(ctx, kind, in, out); }, op);
}

Status cast(const KernelContext &ctx, const TensorRef &in, const TensorRef &out) {
  const int64_t n = in.numElements();
  if (n == 0)
    return Status::ok();
  if (in.dtype == out.dtype) {
    if (in.data == out.data)
      return Status::ok();
    return dispatchBySize(
        in.dtype,
        [&](auto unit) {
          using U = decltype(unit);
          return launchElementwise(ctx, "cast", n, copyKernel<U>, out.as<U>(), in.as<const U>(),
                                   n);
        },
        "cast");
  }
  return dispatchAll(
      in.dtype,
      [&](auto from) {
        using From = decltype(from);
        return dispatchAll(
            out.dtype,
            [&](auto to) {
              using To = decltype(to);
              return launchElementwise(ctx, "cast", n, castKernel<To, From>, out.as<To>(),
                                       in.as<const From>(), n);
            },
            "cast");
      },
      "cast");
}

FSDP_CUDA_NAMESPACE_END
