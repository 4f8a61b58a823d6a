//===- FastMath.h - vectorizable exp and erf for float kernels ------------===//
//
// glibc's expf and erff are scalar calls, so a loop over them cannot use
// SIMD lanes; the GELU (erf), softmax and their gradients spent most of
// their time in those calls. These float versions are branch-free
// straight-line code that the loops vectorize (with -fno-trapping-math):
//   exp: x = n ln2 + r with |r| <= ln2/2 (Cody-Waite split of ln2), exp(r)
//        by its Taylor series through r^7 (truncation < 6e-9 relative),
//        scaled by 2^n through the exponent bits; within 1.5 ulp of the
//        correctly rounded result on [-86.5, 88.72], +inf above, 0 below
//        (results under 3e-38, near FLT_MIN, flush to zero), NaN stays NaN.
//   erf: |x| < 1 by erf's odd Taylor series through x^25 (truncation
//        < 1e-9); above, 1 - t P(t) exp(-x^2) with t = 1/(1 + p|x|)
//        (Abramowitz & Stegun 7.1.26, |error| <= 1.5e-7); within 3.1 ulp.
//   tanh: |x| < 0.6 by its odd Taylor series through x^21; above,
//        1 - 2/(exp(2|x|) + 1); within 3 ulp (glibc's tanhf costs ~36 ns).
// torch's own vectorized kernels are 1-ulp; both are far inside the
// 1e-5 parity tolerance. double keeps the C library's functions (the
// float64 gradient checks need them). The CUDA kernels call these same
// functions (HostDevice.h), not CUDA's expf/erff, so both backends agree.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_FASTMATH_H
#define FSDP_RUNTIME_MATH_FASTMATH_H

#include "runtime/math/HostDevice.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

namespace fsdp::rt {

// always_inline: a call inside a loop would stop it from vectorizing.
FSDP_HD_INLINE float fastExp(float x) {
  const float log2e = 1.44269504088896341f;
  const float ln2Hi = 0.693145751953125f, ln2Lo = 1.428606765330187e-06f;
  const float roundMagic = 12582912.0f; // 1.5 * 2^23: adding it rounds to an integer
  // NaN clamps too (!(NaN >= a) holds): the result is x then anyway, and n's
  // conversion to int below must see a number (NaN to int is undefined).
  float clamped = !(x >= -86.5f) ? -86.5f : (x > 88.72283935546875f ? 88.72283935546875f : x);
  float n = (clamped * log2e + roundMagic) - roundMagic;
  float r = (clamped - n * ln2Hi) - n * ln2Lo;
  float p = 1.0f / 5040.0f;
  p = p * r + 1.0f / 720.0f;
  p = p * r + 1.0f / 120.0f;
  p = p * r + 1.0f / 24.0f;
  p = p * r + 1.0f / 6.0f;
  p = p * r + 0.5f;
  p = p * r + 1.0f;
  p = p * r + 1.0f;
  // 2^(n-1) * 2 keeps the biased exponent in [1, 254] for n in [-125, 128].
  float half = __builtin_bit_cast(float, (static_cast<int32_t>(n) + 126) << 23);
  float y = p * half * 2.0f;
  y = x > 88.72283935546875f ? INFINITY : y;
  y = x < -86.5f ? 0.0f : y;
  return x != x ? x : y;
}

/// a * (c[0] + c[1] a^2 + c[2] a^4 + ...), by Horner's rule in a^2.
template <int N>
FSDP_HD_INLINE float oddSeries(float a, const float (&c)[N]) {
  float a2 = a * a, sum = c[N - 1];
  for (int i = N - 2; i >= 0; --i)
    sum = sum * a2 + c[i];
  return sum * a;
}

FSDP_HD_INLINE float fastErf(float x) {
  // 2/sqrt(pi) * (-1)^n / (n! (2n+1)), n = 0..12.
  static constexpr float taylor[13] = {
      1.1283791670955126f,
      -0.37612638903183754f,
      0.11283791670955126f,
      -0.026866170645131252f,
      0.0052239776254421879f,
      -0.00085483270234508522f,
      0.00012055332981789664f,
      -1.492565035840625e-05f,
      1.6462114365889246e-06f,
      -1.6365844691234924e-07f,
      1.4807192815879218e-08f,
      -1.2290555301717926e-09f,
      9.4227590646504113e-11f};
  float a = std::fabs(x);
  float series = oddSeries(a, taylor);
  float t = 1.0f / (1.0f + 0.3275911f * a);
  float poly =
      ((((1.061405429f * t - 1.453152027f) * t + 1.421413741f) * t - 0.284496736f) * t +
       0.254829592f) *
      t;
  float tail = 1.0f - poly * fastExp(-(a * a));
  return std::copysign(a < 1.0f ? series : tail, x);
}

FSDP_HD_INLINE float fastTanh(float x) {
  // Odd Taylor series through x^21 (truncation < 2e-9 below 0.6); above,
  // 1 - 2 / (exp(2|x|) + 1), which has no cancellation problem there.
  static constexpr float taylor[11] = {
      1.0f,
      -0.33333333333333331f,
      0.13333333333333333f,
      -0.053968253968253971f,
      0.021869488536155203f,
      -0.0088632355299021973f,
      0.0035921280365724811f,
      -0.0014558343870513183f,
      0.00059002744094558595f,
      -0.00023912911424355248f,
      9.6915379569294509e-05f};
  float a = std::fabs(x);
  float series = oddSeries(a, taylor);
  float tail = 1.0f - 2.0f / (fastExp(2.0f * a) + 1.0f);
  return std::copysign(a < 0.6f ? series : tail, x);
}

/// exp / erf / tanh in the compute type C: the fast versions for float, the
/// C library's otherwise.
template <typename C> FSDP_HD_INLINE C expOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastExp(x);
  else
    return std::exp(x);
}
template <typename C> FSDP_HD_INLINE C erfOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastErf(x);
  else
    return std::erf(x);
}
template <typename C> FSDP_HD_INLINE C tanhOf(C x) {
  if constexpr (std::is_same_v<C, float>)
    return fastTanh(x);
  else
    return std::tanh(x);
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_FASTMATH_H
