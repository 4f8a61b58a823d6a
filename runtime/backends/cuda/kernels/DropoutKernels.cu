//===- DropoutKernels.cu - dropout on the GPU ------------------------------===//
//
// The CPU's dropout (CpuKernels.h) with the same counter-based generator
// (runtime/math/DropoutRng.h): each thread draws its elements' keep bits
// from (seed, step, index), so the mask is the CPU's bit for bit however
// the grid is shaped. The step is read from device memory (ctx.step),
// which the device writes before each step, so a captured CUDA graph
// replays with a fresh mask every step. Outside training or with ratio 0,
// the result is the input and the mask all true, as on the CPU.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/math/DropoutRng.h"

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

template <typename T>
__global__ void dropoutKernel(const T *in, T *out, uint8_t *mask, int64_t n, float ratio,
                              uint64_t seed, const uint64_t *step) {
  using C = ComputeType<T>;
  const uint64_t key = dropoutStreamKey(seed, *step);
  const uint64_t threshold = dropoutThreshold(ratio);
  const C scale = C(1) / (C(1) - static_cast<C>(ratio));
  FSDP_GRID_STRIDE(i, n) {
    const bool keep = dropoutKeeps(key, static_cast<uint64_t>(i), threshold);
    // x * 0 rather than 0 (a dropped inf or NaN gives NaN), as on the CPU.
    store(out + i, load(in + i) * (keep ? scale : C(0)));
    if (mask)
      mask[i] = keep;
  }
}

/// Inference or ratio 0: out = in (bits), mask all true.
template <typename U>
__global__ void passThroughKernel(const U *in, U *out, uint8_t *mask, int64_t n) {
  FSDP_GRID_STRIDE(i, n) {
    out[i] = in[i];
    if (mask)
      mask[i] = 1;
  }
}

} // namespace

Status dropout(const KernelContext &ctx, const TensorRef &in, float ratio, bool training,
               uint64_t seed, const TensorRef &out, const TensorRef &mask) {
  if (out.dtype != in.dtype || out.numElements() != in.numElements())
    return Status::error("dropout: result must have the input's type");
  if (mask.dtype != DType::Bool || mask.numElements() != in.numElements())
    return Status::error("dropout: mask must be a bool tensor of the input's shape");
  if (!(ratio >= 0.0f && ratio < 1.0f))
    return Status::error(cat("dropout: ratio ", ratio, " is outside [0, 1)"));
  const int64_t n = in.numElements();
  auto *maskData = static_cast<uint8_t *>(mask.data);
  if (!training || ratio == 0.0f)
    return dispatchBySize(
        in.dtype,
        [&](auto unit) {
          using U = decltype(unit);
          return launchElementwise(ctx, "dropout", n, passThroughKernel<U>, in.as<const U>(),
                                   out.as<U>(), maskData, n);
        },
        "dropout");
  if (!ctx.step)
    return Status::error("dropout: the device provides no step word");
  return dispatchFloat(
      in.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, "dropout", n, dropoutKernel<T>, in.as<const T>(),
                                 out.as<T>(), maskData, n, ratio, seed, ctx.step);
      },
      "dropout");
}

FSDP_CUDA_NAMESPACE_END
