//===- LayerNormParamGrad.h - layer norm's dscale and dbias sums, shared --===//
//
// One column of layer norm's parameter gradients, dscale = Σ dy · x̂ and
// dbias = Σ dy over the rows in order, for both backends' kernels. For
// f32 and f64 the sums are in double with x̂ = (x - mean) · inv_std_dev,
// rounded once. For bf16 and f16 they are torch's CPU kernel's
// (layer_norm_kernel.cpp, one thread, as the parity test runs it): its
// accumulation buffer has the input's dtype, so each row's term,
// dy · (a · x + b) with a = inv_std_dev and b = -a · mean in f32, is added
// in f32 and the sum rounded to the 16-bit type after every row. That
// loses low bits on long columns, but it is what torch, FSDP2 included,
// computes on the CPU in bf16 (its CUDA kernel sums otherwise);
// the double sum agreed with torch on only 33-37% of elements (worst 119
// ulps). FSDP_HD.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_LAYERNORMPARAMGRAD_H
#define FSDP_RUNTIME_MATH_LAYERNORMPARAMGRAD_H

#include "runtime/math/ElementTypes.h"
#include "runtime/math/HostDevice.h"

#include <type_traits>

namespace fsdp::rt {

template <typename T> struct LayerNormParamGrad {
  using C = ComputeType<T>;
  static constexpr bool kSixteenBit = !std::is_same_v<C, T>;
  /// The running sums: double for f32/f64; for 16-bit T the rounded sum,
  /// held as its (exact) f32 value.
  using Acc = std::conditional_t<kSixteenBit, float, double>;
  Acc scale = 0, bias = 0;

  /// Adds one row's element: x and dy at this column, the row's mean and
  /// inverse standard deviation.
  FSDP_HD_INLINE void add(C x, C dy, C mean, C inv) {
    if constexpr (kSixteenBit) {
      const C a = inv, b = -a * mean;
      scale = toCompute(fromCompute<T>(scale + dy * (a * x + b)));
      bias = toCompute(fromCompute<T>(bias + dy));
    } else {
      scale += static_cast<double>(dy * ((x - mean) * inv));
      bias += static_cast<double>(dy);
    }
  }
  FSDP_HD_INLINE C scaleGrad() const { return static_cast<C>(scale); }
  FSDP_HD_INLINE C biasGrad() const { return static_cast<C>(bias); }
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_LAYERNORMPARAMGRAD_H
