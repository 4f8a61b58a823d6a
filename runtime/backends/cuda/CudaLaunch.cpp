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

// nn.attention has no CUDA kernel yet (issue 32: a flash-style kernel in
// the CPU kernel's order, so that SIMT proves it bit for bit): a plan that
// uses it is refused on this backend, never run wrongly.
Status attention(const KernelContext &, const TensorRef &, const TensorRef &, const TensorRef &,
                 const TensorRef *, bool, float, const TensorRef &, const TensorRef &) {
  return Status::error("attention: not implemented yet on the CUDA backend (compile with "
                       "--fuse-attention=off)");
}
Status attentionGrad(const KernelContext &, const TensorRef &, const TensorRef &,
                     const TensorRef &, const TensorRef *, const TensorRef &, const TensorRef &,
                     const TensorRef &, bool, float, const TensorRef &, const TensorRef &,
                     const TensorRef &) {
  return Status::error("attention_grad: not implemented yet on the CUDA backend (compile with "
                       "--fuse-attention=off)");
}

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
