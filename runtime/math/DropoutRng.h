//===- DropoutRng.h - the dropout mask's counter-based generator ----------===//
//
// Element i's random bits are a pure function of (seed, step, i): the i-th
// output of splitmix64 started from a key that hashes seed and step.
// Nothing is carried between elements, so any split of the elements over
// threads, shards, devices or GPU threads draws the same mask, and a step's
// mask can be regenerated from the same three numbers. An element is kept
// when the high 32 bits of its draw are at least ratio * 2^32 (dropped with
// probability ratio to within 2^-32). FSDP_HD: the CPU and CUDA dropout
// kernels draw with this code, so their masks are the same bits.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_DROPOUTRNG_H
#define FSDP_RUNTIME_MATH_DROPOUTRNG_H

#include "runtime/math/HostDevice.h"

#include <cstdint>

namespace fsdp::rt {

inline constexpr uint64_t kDropoutGolden = 0x9e3779b97f4a7c15ull; // splitmix64's increment
inline constexpr uint64_t kDropoutStepSalt = 0xd1b54a32d192ed03ull;

/// splitmix64's output function: a bijective avalanche of 64 bits.
FSDP_HD_INLINE uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The stream of one (seed, step) pair.
FSDP_HD_INLINE uint64_t dropoutStreamKey(uint64_t seed, uint64_t step) {
  return mix64(seed ^ mix64(step ^ kDropoutStepSalt));
}

/// The draw below which an element is dropped, for `ratio` in [0, 1).
FSDP_HD_INLINE uint64_t dropoutThreshold(float ratio) {
  return static_cast<uint64_t>(static_cast<double>(ratio) * 4294967296.0);
}

/// Whether element i of the stream `key` is kept.
FSDP_HD_INLINE bool dropoutKeeps(uint64_t key, uint64_t i, uint64_t threshold) {
  return (mix64(key + (i + 1) * kDropoutGolden) >> 32) >= threshold;
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_MATH_DROPOUTRNG_H
