//===- OptimizerUpdate.h - torch.optim's AdamW and SGD, element by element -===//
//
// The update formulas of torch.optim.AdamW and torch.optim.SGD (single-
// tensor path, torch 1.13) as both backends apply them: the step's scalars
// computed in double as Python computes them (bias corrections, step size,
// 1 - lr * wd) and rounded to the tensor's type T, then per element the
// operations torch's CPU kernels perform, with their roundings:
//   - `mul_(s)`, `/ s`, `addcdiv_(t1, t2, value=s)`: separate roundings,
//     self + (s * t1) / t2 for addcdiv;
//   - `add_(other, alpha=s)`: one fused multiply-add, fma(other, s, self);
//   - `addcmul_(t1, t2, value=s)`: fma(s * t1, t2, self).
// Hyperparameters arrive as the decimal doubles the user wrote (the CPU
// kernel reads the plan's f32 attributes back as shortest decimals). Both
// builds compile this without contraction, so the explicit fma calls are
// the only fused operations. FSDP_HD: the CUDA kernel runs the same code on
// lr and step read from device memory; pow and sqrt of the scalars are each
// machine's library there (CUDA's double pow is within 2 ulp, so a GPU's
// scalars may differ from the CPU's in the last bit of a double).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_OPTIMIZERUPDATE_H
#define FSDP_RUNTIME_MATH_OPTIMIZERUPDATE_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/math/HostDevice.h"

#include <charconv>
#include <cmath>
#include <cstdint>

namespace fsdp::rt {

/// The shortest decimal that rounds to `v`, as a double: the Python value
/// behind a plan's f32 hyperparameter (0.9f -> 0.9). Host code.
inline double decimalOf(float v) {
  char text[32];
  const std::to_chars_result printed = std::to_chars(text, text + sizeof(text), v);
  double value = v;
  std::from_chars(text, printed.ptr, value);
  return value;
}

/// AdamW's hyperparameters as Python doubles.
struct AdamWHyper {
  double beta1, beta2, eps, weightDecay;
};

inline AdamWHyper hyperOf(const AdamWConfig &c) {
  return {decimalOf(c.beta1), decimalOf(c.beta2), decimalOf(c.eps), decimalOf(c.weightDecay)};
}

/// One step's AdamW scalars, rounded to T as torch's kernels see them.
template <typename T> struct AdamWScalars {
  T decay, b1, oneMinusB1, b2, oneMinusB2, bc2Sqrt, eps, negStepSize;
};

template <typename T>
FSDP_HD_INLINE AdamWScalars<T> adamwScalars(const AdamWHyper &h, double lr, int64_t step) {
  // Python: step is a float; the bias corrections are doubles.
  const double biasCorrection1 = 1 - std::pow(h.beta1, static_cast<double>(step));
  const double biasCorrection2 = 1 - std::pow(h.beta2, static_cast<double>(step));
  AdamWScalars<T> s;
  s.decay = static_cast<T>(1 - lr * h.weightDecay);
  s.b1 = static_cast<T>(h.beta1);
  s.oneMinusB1 = static_cast<T>(1 - h.beta1);
  s.b2 = static_cast<T>(h.beta2);
  s.oneMinusB2 = static_cast<T>(1 - h.beta2);
  s.bc2Sqrt = static_cast<T>(std::sqrt(biasCorrection2));
  s.eps = static_cast<T>(h.eps);
  s.negStepSize = static_cast<T>(-(lr / biasCorrection1));
  return s;
}

/// One element of AdamW in torch's order of operations. Every input is
/// read before any result is written, so results may alias their operands.
template <typename T>
FSDP_HD_INLINE void adamwElement(const AdamWScalars<T> &s, T param, T grad, T expAvg,
                                 T expAvgSq, T &paramOut, T &expAvgOut, T &expAvgSqOut) {
  // param.mul_(1 - lr * wd)
  const T p = param * s.decay;
  // exp_avg.mul_(beta1).add_(grad, alpha=1 - beta1)
  const T m = std::fma(grad, s.oneMinusB1, expAvg * s.b1);
  // exp_avg_sq.mul_(beta2).addcmul_(grad, grad, value=1 - beta2)
  const T v = std::fma(s.oneMinusB2 * grad, grad, expAvgSq * s.b2);
  // denom = (exp_avg_sq.sqrt() / bias_correction2_sqrt).add_(eps)
  const T denom = std::sqrt(v) / s.bc2Sqrt + s.eps;
  // param.addcdiv_(exp_avg, denom, value=-step_size)
  paramOut = p + s.negStepSize * m / denom;
  expAvgOut = m;
  expAvgSqOut = v;
}

/// SGD's hyperparameters as Python doubles.
struct SgdHyper {
  double momentum, weightDecay;
  bool nesterov;
};

inline SgdHyper hyperOf(const SgdConfig &c) {
  return {decimalOf(c.momentum), decimalOf(c.weightDecay), c.nesterov};
}

template <typename T> struct SgdScalars {
  T weightDecay, momentum, negLr;
  bool decays, nesterov;
};

template <typename T> FSDP_HD_INLINE SgdScalars<T> sgdScalars(const SgdHyper &h, double lr) {
  SgdScalars<T> s;
  s.decays = h.weightDecay != 0.0;
  s.nesterov = h.nesterov;
  s.weightDecay = static_cast<T>(h.weightDecay);
  s.momentum = static_cast<T>(h.momentum);
  s.negLr = static_cast<T>(-lr);
  return s;
}

/// One element of SGD (dampening 0) in torch's order of operations;
/// `buffer`/`bufferOut` null without a momentum buffer.
template <typename T>
FSDP_HD_INLINE void sgdElement(const SgdScalars<T> &s, T param, T grad, const T *buffer,
                               T &paramOut, T *bufferOut) {
  T d = s.decays ? std::fma(param, s.weightDecay, grad) : grad; // grad.add(param, alpha=wd)
  if (buffer) {
    const T b = *buffer * s.momentum + d;                 // buf.mul_(momentum).add_(d_p)
    d = s.nesterov ? std::fma(b, s.momentum, d) : b;      // d_p.add(buf, alpha=momentum)
    *bufferOut = b;
  }
  paramOut = std::fma(d, s.negLr, param);                 // param.add_(d_p, alpha=-lr)
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_OPTIMIZERUPDATE_H
