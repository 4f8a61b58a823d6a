//===- Activations.h - the scalar math of activations and their gradients -===//
//
// One definition of each elementwise activation and activation gradient,
// used by the per-op kernels (ElementwiseKernels.cpp, GradientKernels.cpp)
// and by the fused elementwise kernel (FusedKernels.cpp), so that fusing a
// chain of ops changes no bit of its result. C is the compute type (float
// or double); the formulas follow torch's where rounding order matters.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ACTIVATIONS_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ACTIVATIONS_H

#include "runtime/backends/cpu/kernels/FastMath.h"

#include <cmath>

namespace fsdp::rt::cpu {

/// `x < 0 ? 0 : x` keeps NaN a NaN, as torch.relu does.
template <typename C> inline C reluOf(C x) { return x < C(0) ? C(0) : x; }
/// exp(-x) overflowing to inf for very negative x still gives 0.
template <typename C> inline C sigmoidOf(C x) { return C(1) / (C(1) + expOf(-x)); }

/// torch's threshold_backward on relu's result.
template <typename C> inline C reluGradOf(C y, C g) { return y <= C(0) ? C(0) : g; }
/// torch: 2.0 / sqrt(M_PI) * exp(-(x.pow(2))) * grad, the constant a Python
/// double rounded to the compute type.
template <typename C> inline C erfGradOf(C x, C g) {
  const C twoOverSqrtPi = static_cast<C>(2.0 / std::sqrt(M_PI));
  return twoOverSqrtPi * expOf(-(x * x)) * g;
}
template <typename C> inline C tanhGradOf(C y, C g) { return g * (C(1) - y * y); }
template <typename C> inline C sigmoidGradOf(C y, C g) { return g * (C(1) - y) * y; }

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ACTIVATIONS_H
