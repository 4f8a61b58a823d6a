//===- Half.h - f16 and bf16 conversions ----------------------------------===//
//
// 16-bit floats are stored as their bit patterns and computed in float.
// Conversions round to nearest even, as torch and CUDA do, so the CPU
// backend's bf16 mixed precision matches what a GPU would produce; NaN stays
// NaN and overflow becomes infinity.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_HALF_H
#define FSDP_RUNTIME_HALF_H

#include <cmath>
#include <cstdint>
#include <cstring>

namespace fsdp::rt {

inline float bf16ToFloat(uint16_t bits) {
  uint32_t wide = static_cast<uint32_t>(bits) << 16;
  float f;
  std::memcpy(&f, &wide, 4);
  return f;
}

inline uint16_t floatToBf16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  if ((bits & 0x7fffffffu) > 0x7f800000u) // NaN: keep it quiet and NaN
    return static_cast<uint16_t>((bits >> 16) | 0x40);
  uint32_t roundingBias = 0x7fffu + ((bits >> 16) & 1u);
  return static_cast<uint16_t>((bits + roundingBias) >> 16);
}

inline float f16ToFloat(uint16_t h) {
  uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  float magnitude;
  if (exponent == 0)
    magnitude = std::ldexp(static_cast<float>(mantissa), -24);
  else if (exponent == 31)
    magnitude = mantissa ? NAN : INFINITY;
  else
    magnitude = std::ldexp(static_cast<float>(mantissa | 0x400u), static_cast<int>(exponent) - 25);
  uint32_t bits;
  std::memcpy(&bits, &magnitude, 4);
  bits |= sign;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

inline uint16_t floatToF16(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint16_t sign = static_cast<uint16_t>((bits >> 16) & 0x8000u);
  uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u)
    return sign | 0x7e00u; // NaN
  if (abs >= 0x477ff000u)  // rounds to >= 65520: infinity
    return sign | 0x7c00u;
  if (abs < 0x38800000u) { // subnormal half (or zero): scale and round
    float scaled = std::fabs(f) * 16777216.0f; // 2^24: units of the smallest subnormal
    return sign | static_cast<uint16_t>(std::nearbyint(scaled));
  }
  // Normal: rebias the exponent, round the 13 dropped mantissa bits to even.
  uint32_t rebiased = abs - 0x38000000u;
  uint32_t roundingBias = 0xfffu + ((rebiased >> 13) & 1u);
  return sign | static_cast<uint16_t>((rebiased + roundingBias) >> 13);
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_HALF_H
