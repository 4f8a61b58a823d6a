//===- ProductScalar.h - the naive matrix product's accumulate and store --===//
//
// The scalar rules of the matrix products that no BLAS runs (integers
// everywhere, 16-bit floats on the CPU and in the SIMT build): the
// accumulator a sum of products runs in, and how alpha * sum + beta * old
// is written back. One definition for the CPU kernel's loop and the CUDA
// kernel's per-element thread, so both sum in the same type, in the same
// order, and round once at the end: the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_PRODUCTSCALAR_H
#define FSDP_RUNTIME_MATH_PRODUCTSCALAR_H

#include "runtime/math/ElementTypes.h"
#include "runtime/math/HostDevice.h"

#include <cstdint>
#include <type_traits>

namespace fsdp::rt {

/// Accumulator of the naive product: float for 16-bit floats; for integers
/// uint64_t, whose wrap-around gives the low bits of the exact product sum
/// without signed-overflow undefined behaviour.
template <typename T>
using ProductAcc = std::conditional_t<kIsIntStorage<T>, uint64_t, ComputeType<T>>;

template <typename T> FSDP_HD_INLINE ProductAcc<T> toProductAcc(T v) {
  if constexpr (kIsIntStorage<T>)
    return static_cast<uint64_t>(v); // modular: sign-extends negative values
  else
    return toCompute(v);
}

/// Writes alpha * acc + beta * old (old is read only when beta != 0, as in
/// BLAS). Integers stay exact when alpha is 1 and beta is 0 or 1; other
/// scalings go through double, like the ONNX reference's float scalars.
template <typename T>
FSDP_HD_INLINE void storeScaledProduct(T *dst, ProductAcc<T> acc, double alpha, double beta) {
  if constexpr (kIsIntStorage<T>) {
    if (alpha == 1.0 && (beta == 0.0 || beta == 1.0)) {
      const uint64_t sum = acc + (beta == 0.0 ? 0 : static_cast<uint64_t>(*dst));
      *dst = static_cast<T>(sum);
      return;
    }
    const double product = std::is_signed_v<T> ? static_cast<double>(static_cast<int64_t>(acc))
                                               : static_cast<double>(acc);
    const double value = alpha * product + (beta == 0.0 ? 0.0 : beta * static_cast<double>(*dst));
    *dst = static_cast<T>(value);
  } else {
    using C = ComputeType<T>;
    C value = static_cast<C>(alpha) * acc;
    if (beta != 0.0)
      value += static_cast<C>(beta) * load(dst);
    store(dst, value);
  }
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_PRODUCTSCALAR_H
