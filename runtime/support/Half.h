//===- Half.h - f16 and bf16 conversions ----------------------------------===//
//
// 16-bit floats are stored as their bit patterns and computed in float.
// Conversions round to nearest even, as torch and CUDA do, so the CPU
// backend's bf16 mixed precision matches what a GPU would produce; NaN stays
// NaN and overflow becomes infinity. The conversions are FSDP_HD
// (runtime/math/HostDevice.h): the CUDA kernels round with these same
// functions, so both backends store the same 16-bit patterns.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_SUPPORT_HALF_H
#define FSDP_RUNTIME_SUPPORT_HALF_H

#include "runtime/math/HostDevice.h"

#include <cmath>
#include <cstdint>

namespace fsdp::rt {

FSDP_HD_INLINE float bf16ToFloat(uint16_t bits) {
  return __builtin_bit_cast(float, static_cast<uint32_t>(bits) << 16);
}

FSDP_HD_INLINE uint16_t floatToBf16(float f) {
  uint32_t bits = __builtin_bit_cast(uint32_t, f);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

FSDP_HD_INLINE float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  uint32_t bits;
  if (exponent == 0) // zero or subnormal: mantissa * 2^-24, exact in float
    bits = __builtin_bit_cast(uint32_t, static_cast<float>(mantissa) * 5.9604644775390625e-8f);
  else if (exponent == 31) // infinity, or NaN as the default quiet NaN
    bits = mantissa ? 0x7fc00000u : 0x7f800000u;
  else // normal: rebias the exponent from 15 to 127
    bits = ((exponent + 112u) << 23) | (mantissa << 13);
  return __builtin_bit_cast(float, bits | sign);
}

FSDP_HD_INLINE uint16_t floatToF16(float f) {
  uint32_t bits = __builtin_bit_cast(uint32_t, f);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u)
    return sign | 0x7e00u; // NaN
  if (abs >= 0x477ff000u)  // rounds to >= 65520: infinity
    return sign | 0x7c00u;
  if (abs < 0x38800000u) { // subnormal half (or zero): scale and round
    // 2^24: units of the smallest subnormal; rintf rounds to nearest even.
    float scaled = __builtin_bit_cast(float, abs) * 16777216.0f;
    return sign | static_cast<uint16_t>(rintf(scaled));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to even.
  uint32_t rebiased = abs - 0x38000000u;
  uint32_t roundingBias = 0xfffu + ((rebiased >> 13) & 1u);
  return sign | static_cast<uint16_t>((rebiased + roundingBias) >> 13);
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_SUPPORT_HALF_H
