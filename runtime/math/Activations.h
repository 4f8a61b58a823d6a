//===- Activations.h - the scalar math of activations and their gradients -===//
//
// One definition of each elementwise activation and activation gradient,
// used by both backends' per-op kernels (ElementwiseKernels, GradientKernels)
// and fused elementwise kernels (FusedKernels), so that fusing a chain of
// ops changes no bit of its result and a CUDA kernel computes the CPU's bits. C is the compute type (float
// or double); the formulas follow torch's where rounding order matters.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_ACTIVATIONS_H
#define FSDP_RUNTIME_MATH_ACTIVATIONS_H

#include "runtime/math/FastMath.h"

#include "runtime/math/HostDevice.h"

#include <cmath>

namespace fsdp::rt {

/// `x < 0 ? 0 : x` keeps NaN a NaN, as torch.relu does.
template <typename C> FSDP_HD_INLINE C reluOf(C x) { return x < C(0) ? C(0) : x; }
/// exp(-x) overflowing to inf for very negative x still gives 0.
template <typename C> FSDP_HD_INLINE C sigmoidOf(C x) { return C(1) / (C(1) + expOf(-x)); }

/// torch's threshold_backward on relu's result.
template <typename C> FSDP_HD_INLINE C reluGradOf(C y, C g) { return y <= C(0) ? C(0) : g; }
/// torch: 2.0 / sqrt(M_PI) * exp(-(x.pow(2))) * grad, the constant a Python
/// double rounded to the compute type.
template <typename C> FSDP_HD_INLINE C erfGradOf(C x, C g) {
  const C twoOverSqrtPi = static_cast<C>(2.0 / std::sqrt(M_PI));
  return twoOverSqrtPi * expOf(-(x * x)) * g;
}
template <typename C> FSDP_HD_INLINE C tanhGradOf(C y, C g) { return g * (C(1) - y * y); }
template <typename C> FSDP_HD_INLINE C sigmoidGradOf(C y, C g) { return g * (C(1) - y) * y; }

// --- activations of torch 2.x exports -----------------
// torch's GeluKernelImpl / GeluBackwardKernelImpl formulas, constants as
// Python doubles rounded to C; erf and tanh are the fast versions above.

template <typename C> FSDP_HD_INLINE C geluOf(C x) {
  const C alpha = static_cast<C>(M_SQRT1_2);
  return x * C(0.5) * (C(1) + erfOf(x * alpha));
}
template <typename C> FSDP_HD_INLINE C geluTanhOf(C x) {
  const C beta = static_cast<C>(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = static_cast<C>(0.044715);
  C cube = x * x * x;
  return C(0.5) * x * (C(1) + tanhOf(beta * (x + kappa * cube)));
}
template <typename C> FSDP_HD_INLINE C geluGradOf(C x, C g) {
  const C alpha = static_cast<C>(M_2_SQRTPI * M_SQRT1_2 * 0.5), beta = static_cast<C>(M_SQRT1_2);
  C cdf = C(0.5) * (C(1) + erfOf(x * beta));
  C pdf = alpha * expOf(x * x * C(-0.5));
  return g * (cdf + x * pdf);
}
template <typename C> FSDP_HD_INLINE C geluTanhGradOf(C x, C g) {
  const C beta = static_cast<C>(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = static_cast<C>(0.044715);
  C square = x * x, cube = square * x;
  C t = tanhOf(beta * (x + kappa * cube));
  C left = C(0.5) * x, right = C(1) + t;
  C leftDerivative = C(0.5) * right;
  C innerDerivative = beta * (C(1) + C(3) * kappa * square);
  C rightDerivative = left * (C(1) - t * t) * innerDerivative;
  return g * (leftDerivative + rightDerivative);
}
/// ONNX Softplus, ln(exp(x) + 1), without overflow for large x and
/// without losing exp(x) under 1 for very negative x.
template <typename C> FSDP_HD_INLINE C softplusOf(C x) {
  C positive = x > C(0) ? x : C(0);
  return positive + std::log1p(expOf(-std::fabs(x)));
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_ACTIVATIONS_H
