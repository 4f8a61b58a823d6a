//===- DropoutKernels.cpp - dropout on the CPU ----------------------------===//
//
// Dropout with the counter-based generator of runtime/math/DropoutRng.h
// (shared with the CUDA kernel, so both draw the same mask): element i's
// keep bit is a pure function of (seed, step, i); every element is
// multiplied by its mask times
// 1 / (1 - ratio), so the expectation is unchanged. Outside training, or with ratio 0, the output is the input
// and the mask all true. The mask is bool storage (one byte, 0 or 1); a
// mask whose data is null is not written (the executor may not plan an
// unused one).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuKernels.h"
#include "runtime/backends/cpu/kernels/Dispatch.h"
#include "runtime/math/DropoutRng.h"

#include <cstring>

namespace fsdp::rt::cpu {
namespace {

template <typename T>
void dropoutImpl(const T *in, T *out, uint8_t *mask, int64_t count, float ratio, uint64_t key) {
  using C = ComputeType<T>;
  const uint64_t threshold = dropoutThreshold(ratio);
  const C scale = C(1) / (C(1) - static_cast<C>(ratio));
  // Keyed by element index, so any split across the rank's threads draws
  // the same bits.
  (void)parallelFor(0, count, kElementwiseGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const bool keep = dropoutKeeps(key, static_cast<uint64_t>(i), threshold);
      // x * 0 rather than 0, as ONNX and torch multiply by the mask (so a
      // dropped inf or NaN gives NaN); branch-free, as keep is random.
      store(out + i, load(in + i) * (keep ? scale : C(0)));
      if (mask)
        mask[i] = keep;
    }
  });
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
  const uint64_t key = dropoutStreamKey(seed, step);
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        dropoutImpl(in.as<T>(), out.as<T>(), maskData, count, ratio, key);
      },
      "dropout");
}

} // namespace fsdp::rt::cpu
