//===- ElementwiseOps.h - the scalar semantics of the elementwise ops -----===//
//
// One element of each elementwise op, as both backends compute it: signed
// integer arithmetic wraps (computed in the unsigned type, so overflow,
// INT_MIN / -1 and -INT_MIN are defined), float-to-integer conversion
// truncates and saturates with NaN -> 0 (what CUDA's conversions do, so
// no undefined conversion reaches either machine), max/min propagate NaN
// as torch.maximum/minimum do. FSDP_HD: the CPU kernels and the CUDA
// kernels call these same functions. Integer division by zero is the
// caller's to refuse (the CPU before writing, a CUDA kernel as a fault).
// pow and the transcendental functions the callers add are each machine's
// library (glibc's, CUDA's), the one place the backends may differ in the
// last bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_ELEMENTWISEOPS_H
#define FSDP_RUNTIME_MATH_ELEMENTWISEOPS_H

#include "runtime/math/ElementTypes.h"
#include "runtime/math/HostDevice.h"

#include <cmath>
#include <limits>
#include <type_traits>

namespace fsdp::rt {

/// The unsigned type integer arithmetic on T wraps in (at least `unsigned`,
/// so that narrow types do not promote to a signed int that can overflow).
template <typename T>
using WrapType = std::make_unsigned_t<std::common_type_t<T, unsigned>>;

/// Float to integer: truncates toward zero, saturates out-of-range values
/// and maps NaN to 0 (no undefined conversion ever reaches the hardware).
template <typename I, typename F> FSDP_HD_INLINE I saturatingCast(F v) {
  using Limits = std::numeric_limits<I>;
  constexpr F lowest = static_cast<F>(Limits::min()); // 0 or -2^k: exact
  // 2^digits, the first value past the maximum, built exactly.
  constexpr F pastMax = static_cast<F>(Limits::max() / 2 + 1) * F(2);
  if (v != v)
    return 0;
  if (v < lowest)
    return Limits::min();
  if (v >= pastMax)
    return Limits::max();
  return static_cast<I>(v);
}

/// One element of Cast, storage to storage.
template <typename To, typename From> FSDP_HD_INLINE To convert(From v) {
  auto c = toCompute(v);
  if constexpr (std::is_same_v<To, bool>)
    return c != 0;
  else if constexpr (kIsIntStorage<To> && std::is_floating_point_v<decltype(c)>)
    return saturatingCast<To>(c);
  else // int/bool -> anything, float -> float: via To's compute type
    return fromCompute<To>(static_cast<ComputeType<To>>(c));
}

template <typename C> FSDP_HD_INLINE C addOp(C x, C y) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<WrapType<C>>(x) + static_cast<WrapType<C>>(y));
  else
    return x + y;
}
template <typename C> FSDP_HD_INLINE C subOp(C x, C y) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<WrapType<C>>(x) - static_cast<WrapType<C>>(y));
  else
    return x - y;
}
template <typename C> FSDP_HD_INLINE C mulOp(C x, C y) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(static_cast<WrapType<C>>(x) * static_cast<WrapType<C>>(y));
  else
    return x * y;
}
template <typename C> FSDP_HD_INLINE C negOp(C x) {
  if constexpr (std::is_integral_v<C>)
    return static_cast<C>(WrapType<C>(0) - static_cast<WrapType<C>>(x));
  else
    return -x;
}
/// Integers: C++ division truncates toward zero like ONNX; the divisor was
/// checked for zero beforehand and x / -1 is negation (wraps for INT_MIN).
template <typename C> FSDP_HD_INLINE C divOp(C x, C y) {
  if constexpr (std::is_integral_v<C> && std::is_signed_v<C>)
    return y == -1 ? negOp(x) : static_cast<C>(x / y);
  else
    return static_cast<C>(x / y);
}
/// torch.maximum / torch.minimum: a NaN operand gives NaN.
template <typename C> FSDP_HD_INLINE C maxOp(C x, C y) {
  if constexpr (std::is_floating_point_v<C>)
    if (x != x || y != y)
      return x + y;
  return x > y ? x : y;
}
template <typename C> FSDP_HD_INLINE C minOp(C x, C y) {
  if constexpr (std::is_floating_point_v<C>)
    if (x != x || y != y)
      return x + y;
  return x < y ? x : y;
}
/// torch's wrapped number: a bf16/f16 tensor element x (in float) meeting an
/// f32 rank-0 operand s in add/sub/mul/div (NNElementwiseOps.td); R* ops have
/// the scalar first. torch 2.x's CPU kernels keep s unrounded only where they
/// take their CPU-scalar path, mul (either order: `s * x` calls `x.mul(s)`)
/// and division by s; add, sub and a scalar dividend cast s to the tensor's
/// dtype first. The result rounds once, on store.
enum class WrappedScalarOp : uint8_t { Add, Sub, RSub, Mul, Div, RDiv };

template <WrappedScalarOp Op, typename T> FSDP_HD_INLINE float wrappedScalarOf(float x, float s) {
  const float rounded = toCompute(fromCompute<T>(s));
  if constexpr (Op == WrappedScalarOp::Add)
    return x + rounded;
  else if constexpr (Op == WrappedScalarOp::Sub)
    return x - rounded;
  else if constexpr (Op == WrappedScalarOp::RSub)
    return rounded - x;
  else if constexpr (Op == WrappedScalarOp::Mul)
    return x * s;
  else if constexpr (Op == WrappedScalarOp::Div)
    return x / s;
  else
    return rounded / x;
}

/// Calls run(std::integral_constant<WrappedScalarOp, op>{}) for the run-time
/// `op`, so each backend instantiates its kernel once per op (host only).
template <typename Run> auto dispatchWrappedScalarOp(WrappedScalarOp op, const Run &run) {
  using W = WrappedScalarOp;
  switch (op) {
  case W::Add: return run(std::integral_constant<W, W::Add>{});
  case W::Sub: return run(std::integral_constant<W, W::Sub>{});
  case W::RSub: return run(std::integral_constant<W, W::RSub>{});
  case W::Mul: return run(std::integral_constant<W, W::Mul>{});
  case W::Div: return run(std::integral_constant<W, W::Div>{});
  case W::RDiv: break;
  }
  return run(std::integral_constant<W, W::RDiv>{});
}

/// Float bases compute in their own compute type (float or double);
/// integer bases in double and convert back, as the ONNX reference does.
template <typename T, typename E> FSDP_HD_INLINE ComputeType<T> powOp(ComputeType<T> x, ComputeType<E> y) {
  if constexpr (kIsFloatStorage<T>)
    return std::pow(x, static_cast<ComputeType<T>>(y));
  else
    return saturatingCast<T>(std::pow(static_cast<double>(x), static_cast<double>(y)));
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_ELEMENTWISEOPS_H
