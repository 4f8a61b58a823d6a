//===- DropoutKernels.cpp - dropout on the CPU ----------------------------===//
//
// Dropout with a counter-based generator: element i's random bits are a
// pure function of (seed, step, i), namely the i-th output of splitmix64
// started from a key that hashes seed and step. Nothing is carried between
// elements, so any split of the elements over threads, shards or devices
// draws the same mask, and a step's mask can be regenerated for the
// backward pass from the same three numbers. An element is dropped when the
// high 32 bits of its draw fall below ratio * 2^32 (probability ratio to
// within 2^-32); every element is multiplied by its mask times
// 1 / (1 - ratio), so the expectation is unchanged. Outside training, or with ratio 0, the output is the input
// and the mask all true. The mask is bool storage (one byte, 0 or 1); a
// mask whose data is null is not written (the executor may not plan an
// unused one).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"

#include <cstring>

namespace fsdp::rt::cpu {
namespace {

constexpr uint64_t kGolden = 0x9e3779b97f4a7c15ull; // splitmix64's increment
constexpr uint64_t kStepSalt = 0xd1b54a32d192ed03ull;

/// splitmix64's output function: a bijective avalanche of 64 bits.
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

/// The stream of one (seed, step) pair.
inline uint64_t streamKey(uint64_t seed, uint64_t step) {
  return mix64(seed ^ mix64(step ^ kStepSalt));
}

/// Element i's draw: splitmix64's i-th output from state `key`.
inline uint64_t draw(uint64_t key, uint64_t i) { return mix64(key + (i + 1) * kGolden); }

template <typename T>
void dropoutImpl(const T *in, T *out, uint8_t *mask, int64_t count, float ratio, uint64_t key) {
  using C = ComputeType<T>;
  const uint64_t threshold = static_cast<uint64_t>(static_cast<double>(ratio) * 4294967296.0);
  const C scale = C(1) / (C(1) - static_cast<C>(ratio));
  for (int64_t i = 0; i < count; ++i) {
    const bool keep = (draw(key, static_cast<uint64_t>(i)) >> 32) >= threshold;
    // x * 0 rather than 0, as ONNX and torch multiply by the mask (so a
    // dropped inf or NaN gives NaN); branch-free, as keep is random.
    store(out + i, load(in + i) * (keep ? scale : C(0)));
    if (mask)
      mask[i] = keep;
  }
}

} // namespace

Status dropout(const TensorRef &in, float ratio, bool training, uint64_t seed, uint64_t step,
               const TensorRef &out, const TensorRef &mask) {
  if (out.dtype != in.dtype || out.numElements() != in.numElements())
    return Status::error("dropout: result must have the input's type");
  if (mask.dtype != DType::Bool || mask.numElements() != in.numElements())
    return Status::error("dropout: mask must be a bool tensor of the input's shape");
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Status::error(cat("dropout: ratio ", ratio, " is outside [0, 1)"));
  const int64_t count = in.numElements();
  auto *maskData = static_cast<uint8_t *>(mask.data);
  if (!training || ratio == 0.0f) {
    if (in.data != out.data && count > 0)
      std::memcpy(out.data, in.data, in.byteSize());
    if (maskData)
      std::memset(maskData, 1, static_cast<size_t>(count));
    return Status::ok();
  }
  const uint64_t key = streamKey(seed, step);
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        dropoutImpl(in.as<T>(), out.as<T>(), maskData, count, ratio, key);
      },
      "dropout");
}

} // namespace fsdp::rt::cpu
