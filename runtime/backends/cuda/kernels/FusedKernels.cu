//===- FusedKernels.cu - a chain of elementwise ops in one pass ------------===//
//
// The Fused kernel on the GPU: the program is decoded and checked on the
// host by the CPU's own decoder (FusedProgram.h) and passed by value; each
// thread then runs the whole program for its elements with the values in
// registers (local memory for long programs), reading each input once and
// writing each result once. Each op is the scalar code of its unfused
// kernel, from the table the CPU kernel applies (runtime/math/FusedOps.h),
// so results are the CPU's bits (log: libdevice's on a GPU, within an ulp
// of glibc's; the SIMT build calls glibc's); a bf16/f16 program rounds each
// op's result with the CPU's roundToStorage. A compiled step's PTX for the
// program, when the device loaded one (GeneratedPtx.h), runs instead.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/FusedProgram.h"
#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/math/FusedOps.h"

#include <cmath>

#if !defined(FSDP_SIMT_EMULATION)
#include "runtime/backends/cuda/GeneratedPtx.h"
#endif

FSDP_CUDA_NAMESPACE_BEGIN
namespace {

/// The operand and result pointers (a kernel parameter), elements of the
/// program's storage dtype.
struct FusedOperands {
  const void *inputs[kMaxFusedValues];
  void *outputs[kMaxFusedValues];
};

/// Step k's op on one element (FusedOps.h: the CPU's table).
__device__ inline float applyFusedOp(int64_t op, float x, float y) {
  return withFusedOp(op, [&](auto fn) { return fn(x, y); });
}

/// Storage type T (float, BF16, F16): inputs widened to f32 as loaded,
/// each op's result rounded as its unfused op stores it (the CPU's
/// roundToStorage), results stored exactly.
template <typename T> __global__ void fusedKernel(FusedProgram p, FusedOperands io) {
  FSDP_GRID_STRIDE(i, p.n) {
    float value[kMaxFusedValues];
    for (int j = 0; j < p.numInputs; ++j)
      value[j] = load(static_cast<const T *>(io.inputs[j]) + (p.scalar[j] ? 0 : i));
    for (int k = 0; k < p.numSteps; ++k) {
      const FusedStep &s = p.steps[k];
      const float a = value[s.a];
      const float r = roundToStorage<T>(applyFusedOp(s.op, a, s.b >= 0 ? value[s.b] : a));
      value[p.numInputs + k] = r;
      if (p.outputOf[k] >= 0)
        store(static_cast<T *>(io.outputs[p.outputOf[k]]) + i, r);
    }
  }
}

} // namespace

Status fusedElementwise(const KernelContext &ctx, const TensorRef *inputs, int numInputs,
                        const int64_t *ints, int numInts, const TensorRef *outputs,
                        int numOutputs) {
  FusedProgram program;
  FSDP_RETURN_IF_ERROR(
      decodeFusedProgram(inputs, numInputs, ints, numInts, outputs, numOutputs, program));
  if (numOutputs > kMaxFusedValues)
    return Status::error("fused: too many results");
  FusedOperands io{};
  for (int j = 0; j < numInputs; ++j)
    io.inputs[j] = inputs[j].data;
  for (int j = 0; j < numOutputs; ++j)
    io.outputs[j] = outputs[j].data;
#if !defined(FSDP_SIMT_EMULATION)
  // The compiled step's kernel for this program (and dtype), when it has one.
  if (ctx.generated && program.n > 0)
    if (CUfunction generated = ctx.generated->find(
            fusedProgramKey(ints, numInts, program.scalar, numInputs, program.dtype))) {
      // Typed float as the launch's parameters are (pointers all the same);
      // a bf16/f16 kernel reads 16-bit elements through them.
      const float *in[kMaxFusedValues];
      float *out[kMaxFusedValues];
      for (int j = 0; j < numInputs; ++j)
        in[j] = static_cast<const float *>(io.inputs[j]);
      for (int j = 0; j < numOutputs; ++j)
        out[j] = static_cast<float *>(io.outputs[j]);
      return ctx.generated->launch(generated, ctx.stream, in, numInputs, out, numOutputs,
                                   program.n, "fused (generated PTX)");
    }
#endif
  return withFusedDType(program.dtype, [&](auto tag) {
    return launchElementwise(ctx, "fused", program.n, fusedKernel<decltype(tag)>, program, io);
  });
}

FSDP_CUDA_NAMESPACE_END
