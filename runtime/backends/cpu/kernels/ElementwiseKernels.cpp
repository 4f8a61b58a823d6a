//===- ElementwiseKernels.cpp - binary, where, unary and cast on the CPU --===//
//
// The elementwise op family of CpuKernels.h. Broadcast operands are walked
// through a coalesced StridedLayout (Dispatch.h): same-shape operands become
// a single contiguous row, a scalar or a trailing-dims operand ([B,T,C] +
// [C]) becomes rows whose inner stride is 0 or 1, and those stride
// combinations get loops with compile-time strides that the compiler
// vectorizes; anything else takes the general strided row. Signed integer
// arithmetic wraps (computed in the unsigned type) so overflow, INT_MIN / -1
// and -INT_MIN are defined, and integer division by zero is reported before
// anything is written. Float-to-integer conversion saturates (NaN -> 0) as
// CUDA does, so a GPU backend can match it.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/OperandChecks.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/Activations.h"
#include "runtime/math/ElementwiseOps.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <type_traits>

namespace fsdp::rt::cpu {
namespace {

// Scalar semantics (wrapping integers, saturating casts, NaN-propagating
// max/min, pow): runtime/math/ElementwiseOps.h, shared with the CUDA kernels.

// --- Broadcast loops ---------------------------------------------------------------

/// One row with compile-time strides (0 or 1): the vectorizable case. A
/// stride of 0 makes the load loop-invariant, which the compiler hoists.
template <int SA, int SB, typename T, typename E, typename Fn>
void binaryRowFixed(T *out, const T *a, const E *b, int64_t n, Fn fn) {
  for (int64_t i = 0; i < n; ++i)
    store(out + i, fn(load(a + SA * i), load(b + SB * i)));
}

template <typename T, typename E, typename Fn>
void runBinary(const TensorRef &a, const TensorRef &b, const TensorRef &out, Fn fn) {
  StridedLayout<3> layout = broadcastLayout<3>(out, {&a, &b});
  T *po = out.as<T>();
  const T *pa = a.as<const T>();
  const E *pb = b.as<const E>();
  forEachRowParallel(layout, kElementwiseGrain,
                     [&](const int64_t *off, int64_t n, const int64_t *s) {
                       T *o = po + off[0];
                       const T *x = pa + off[1];
                       const E *y = pb + off[2];
                       if (s[1] == 1 && s[2] == 1)
                         binaryRowFixed<1, 1>(o, x, y, n, fn);
                       else if (s[1] == 1 && s[2] == 0)
                         binaryRowFixed<1, 0>(o, x, y, n, fn);
                       else if (s[1] == 0 && s[2] == 1)
                         binaryRowFixed<0, 1>(o, x, y, n, fn);
                       else
                         for (int64_t i = 0; i < n; ++i)
                           store(o + i, fn(load(x + i * s[1]), load(y + i * s[2])));
                     });
}

template <typename T> bool anyZero(const TensorRef &t) {
  const T *p = t.as<const T>();
  for (int64_t i = 0, n = t.numElements(); i < n; ++i)
    if (p[i] == 0)
      return true;
  return false;
}

template <typename T>
Status binaryTyped(BinaryKind kind, const TensorRef &a, const TensorRef &b, const TensorRef &out) {
  using C = ComputeType<T>;
  // Lambdas, not function pointers, so the row loops inline the operation.
  switch (kind) {
  case BinaryKind::Add:
    runBinary<T, T>(a, b, out, [](C x, C y) { return addOp(x, y); });
    break;
  case BinaryKind::Sub:
    runBinary<T, T>(a, b, out, [](C x, C y) { return subOp(x, y); });
    break;
  case BinaryKind::Mul:
    runBinary<T, T>(a, b, out, [](C x, C y) { return mulOp(x, y); });
    break;
  case BinaryKind::Div:
    if constexpr (kIsIntStorage<T>)
      if (anyZero<T>(b))
        return Status::error(cat("div: integer division by zero (", dtypeName(b.dtype), ")"));
    runBinary<T, T>(a, b, out, [](C x, C y) { return divOp(x, y); });
    break;
  case BinaryKind::Max:
    runBinary<T, T>(a, b, out, [](C x, C y) { return maxOp(x, y); });
    break;
  case BinaryKind::Min:
    runBinary<T, T>(a, b, out, [](C x, C y) { return minOp(x, y); });
    break;
  case BinaryKind::Pow:
    break; // handled by powTyped (the exponent has its own dtype)
  }
  return Status::ok();
}

/// torch's wrapped number: `tensor` bf16/f16, `scalar` one f32 element, the
/// element rule Op (runtime/math/ElementwiseOps.h). The scalar is the row
/// loop's second operand whatever its side in the op.
template <typename T>
void wrappedScalarTyped(WrappedScalarOp op, const TensorRef &tensor, const TensorRef &scalar,
                        const TensorRef &out) {
  auto run = [&](auto opTag) {
    constexpr WrappedScalarOp Op = decltype(opTag)::value;
    runBinary<T, float>(tensor, scalar, out,
                        [](float x, float s) { return wrappedScalarOf<Op, T>(x, s); });
  };
  return dispatchWrappedScalarOp(op, run);
}

template <typename T, typename E>
void powTyped(const TensorRef &a, const TensorRef &b, const TensorRef &out) {
  // x ** 2 (variance, squared error) is common: x * x is exact where the
  // general pow call is slow and does not vectorize.
  if constexpr (kIsFloatStorage<T> && std::is_same_v<T, E>) {
    if (b.numElements() == 1 && load(b.as<const E>()) == 2) {
      runBinary<T, E>(a, b, out, [](ComputeType<T> x, ComputeType<E>) { return x * x; });
      return;
    }
  }
  runBinary<T, E>(a, b, out,
                  [](ComputeType<T> x, ComputeType<E> y) { return powOp<T, E>(x, y); });
}

// --- Where -----------------------------------------------------------------------

/// Condition bytes are tested for nonzero rather than read as bool, so a
/// mask holding any nonzero byte still selects x. The select is a bit mask
/// because the compiler does not vectorize `c ? x : y` with a byte-wide c.
template <int SC, int SX, int SY, typename U>
void whereRowFixed(U *out, const uint8_t *c, const U *x, const U *y, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    U mask = static_cast<U>(U(0) - static_cast<U>(c[SC * i] != 0));
    out[i] = static_cast<U>((x[SX * i] & mask) | (y[SY * i] & static_cast<U>(~mask)));
  }
}

template <typename U>
void whereRow(U *o, const uint8_t *c, const U *x, const U *y, int64_t n, const int64_t *s) {
  // The masking patterns of attention: mask and scores contiguous or
  // broadcast, the fill value a scalar.
  auto unit = [](int64_t stride) { return stride == 0 || stride == 1; };
  if (!unit(s[1]) || !unit(s[2]) || !unit(s[3])) {
    for (int64_t i = 0; i < n; ++i)
      o[i] = c[i * s[1]] ? x[i * s[2]] : y[i * s[3]];
    return;
  }
  switch (s[1] * 4 + s[2] * 2 + s[3]) {
  case 0: whereRowFixed<0, 0, 0>(o, c, x, y, n); break;
  case 1: whereRowFixed<0, 0, 1>(o, c, x, y, n); break;
  case 2: whereRowFixed<0, 1, 0>(o, c, x, y, n); break;
  case 3: whereRowFixed<0, 1, 1>(o, c, x, y, n); break;
  case 4: whereRowFixed<1, 0, 0>(o, c, x, y, n); break;
  case 5: whereRowFixed<1, 0, 1>(o, c, x, y, n); break;
  case 6: whereRowFixed<1, 1, 0>(o, c, x, y, n); break;
  default: whereRowFixed<1, 1, 1>(o, c, x, y, n); break;
  }
}

// --- Unary -------------------------------------------------------------------------

template <typename T> Status unaryTyped(UnaryKind kind, const TensorRef &in, const TensorRef &out) {
  using C = ComputeType<T>;
  // Neg and Relu take floats and signed integers; the rest only floats.
  if constexpr (kIsFloatStorage<T> || std::is_signed_v<C>) {
    if (kind == UnaryKind::Neg) {
      mapUnary<T>(in, out, [](C x) { return negOp(x); });
      return Status::ok();
    }
    if (kind == UnaryKind::Relu) {
      mapUnary<T>(in, out, [](C x) { return reluOf(x); });
      return Status::ok();
    }
  }
  if constexpr (kIsFloatStorage<T>) {
    switch (kind) {
    case UnaryKind::Exp: mapUnary<T>(in, out, [](C x) { return expOf(x); }); break;
    case UnaryKind::Log: mapUnary<T>(in, out, [](C x) { return std::log(x); }); break;
    case UnaryKind::Sqrt: mapUnary<T>(in, out, [](C x) { return std::sqrt(x); }); break;
    case UnaryKind::Erf: mapUnary<T>(in, out, [](C x) { return erfOf(x); }); break;
    case UnaryKind::Tanh: mapUnary<T>(in, out, [](C x) { return tanhOf(x); }); break;
    case UnaryKind::Sigmoid: mapUnary<T>(in, out, [](C x) { return sigmoidOf(x); }); break;
    default: return unsupportedDType(unaryName(kind), in.dtype);
    }
    return Status::ok();
  }
  return unsupportedDType(unaryName(kind), in.dtype);
}

/// f32 to or from bf16/f16: the casts a mixed-precision step runs on
/// every weight and weight gradient.
template <typename From, typename To> constexpr bool isMixedPrecisionPair() {
  constexpr bool fromWide = std::is_same_v<From, float>, toWide = std::is_same_v<To, float>;
  constexpr bool fromNarrow = std::is_same_v<From, BF16> || std::is_same_v<From, F16>;
  constexpr bool toNarrow = std::is_same_v<To, BF16> || std::is_same_v<To, F16>;
  return (fromWide && toNarrow) || (fromNarrow && toWide);
}

} // namespace

Status binary(BinaryKind kind, const TensorRef &a, const TensorRef &b, const TensorRef &out) {
  const char *op = binaryName(kind);
  if (std::optional<WrappedScalarMix> mix = wrappedScalarMix(kind, a, b, out)) {
    if (out.numElements() == 0)
      return Status::ok();
    return dispatch<bitOf(DType::F16) | bitOf(DType::BF16)>(
        out.dtype,
        [&](auto tag) { wrappedScalarTyped<decltype(tag)>(mix->op, *mix->tensor, *mix->scalar, out); },
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
          return binaryTyped<T>(kind, a, b, out);
        return dispatchNumeric(
            b.dtype,
            [&](auto exponent) { powTyped<T, decltype(exponent)>(a, b, out); }, op);
      },
      op);
}

Status where(const TensorRef &cond, const TensorRef &x, const TensorRef &y, const TensorRef &out) {
  FSDP_RETURN_IF_ERROR(requireDType("where", cond, DType::Bool));
  FSDP_RETURN_IF_ERROR(requireDType("where", x, out.dtype));
  FSDP_RETURN_IF_ERROR(requireDType("where", y, out.dtype));
  if (out.numElements() == 0)
    return Status::ok();
  StridedLayout<4> layout = broadcastLayout<4>(out, {&cond, &x, &y});
  // Selection moves bits, so only the element size matters.
  return dispatchBySize(
      out.dtype,
      [&](auto unit) {
        using U = decltype(unit);
        forEachRowParallel(layout, kElementwiseGrain,
                           [&](const int64_t *off, int64_t n, const int64_t *s) {
                             whereRow(out.as<U>() + off[0], cond.as<const uint8_t>() + off[1],
                                      x.as<const U>() + off[2], y.as<const U>() + off[3], n, s);
                           });
      },
      "where");
}

Status unary(UnaryKind kind, const TensorRef &in, const TensorRef &out) {
  const char *op = unaryName(kind);
  FSDP_RETURN_IF_ERROR(requireDType(op, out, in.dtype));
  if (kind == UnaryKind::Not) {
    FSDP_RETURN_IF_ERROR(requireDType(op, in, DType::Bool));
    const uint8_t *x = in.as<const uint8_t>();
    bool *o = out.as<bool>();
    for (int64_t i = 0, n = in.numElements(); i < n; ++i)
      o[i] = x[i] == 0;
    return Status::ok();
  }
  return dispatch<kFloatTypes | kSignedIntTypes>(
      in.dtype, [&](auto t) { return unaryTyped<decltype(t)>(kind, in, out); }, op);
}

Status cast(const TensorRef &in, const TensorRef &out) {
  int64_t n = in.numElements();
  if (n == 0)
    return Status::ok();
  if (in.dtype == out.dtype) {
    if (in.data != out.data)
      std::memmove(out.data, in.data, in.byteSize());
    return Status::ok();
  }
  return dispatchAll(
      in.dtype,
      [&](auto from) {
        using From = decltype(from);
        return dispatchAll(
            out.dtype,
            [&](auto to) {
              using To = decltype(to);
              const From *x = in.as<const From>();
              To *o = out.as<To>();
              // Mixed precision's casts (every gathered weight, every
              // weight gradient, each step) split across the rank's
              // threads in wide loops; the rest stay one plain loop.
              if constexpr (isMixedPrecisionPair<From, To>()) {
                (void)parallelFor(0, n, kElementwiseGrain, [&](int64_t begin, int64_t end) {
                  runWide([&] {
                    for (int64_t i = begin; i < end; ++i)
                      o[i] = convert<To>(x[i]);
                  });
                });
              } else {
                for (int64_t i = 0; i < n; ++i)
                  o[i] = convert<To>(x[i]);
              }
            },
            "cast");
      },
      "cast");
}

} // namespace fsdp::rt::cpu
