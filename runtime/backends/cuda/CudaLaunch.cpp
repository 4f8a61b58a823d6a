//===- CudaLaunch.cpp - plan kernels to CUDA kernel launches ---------------===//
//
// The kernel contract's one decoding (runtime/backends/LaunchDecoding.inc)
// calling the CUDA kernels with the launch's context. Host code: built by
// the C++ compiler into the CUDA backend and into its SIMT build alike.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/CudaLaunch.h"

#include "runtime/backends/LaunchDecoding.h"
#include "runtime/plan/plan_generated.h"

// Every kernel has a case (LaunchDecoding.inc).
#pragma GCC diagnostic error "-Wswitch"

FSDP_CUDA_NAMESPACE_BEGIN

Status launchKernel(const Launch &l, const KernelContext &ctx) {
  using namespace decoding;
  using plan::Kernel;
  const TensorRef *in = l.inputs, *out = l.outputs;
#define FSDP_CALL(fn, ...) cuda::fn(ctx, __VA_ARGS__)
#define FSDP_DROPOUT_STEP
#include "runtime/backends/LaunchDecoding.inc"
#undef FSDP_CALL
#undef FSDP_DROPOUT_STEP
  return Status::error(cat("cuda: kernel ", l.kernel, " is not implemented"));
}

FSDP_CUDA_NAMESPACE_END
