//===- AttentionKernels.cu - nn.attention on the CUDA backend: refused ---===//
//
// nn.attention's CPU kernels (cpu/kernels/AttentionKernels.cpp) have no CUDA
// twin yet. Issue 32 asks for a flash-style kernel in the CPU kernel's
// per-element order, so that the SIMT emulation proves it bit for bit; until
// it exists, a plan that uses attention is refused on this backend with a
// clear error, never run wrongly. fsdp-opt only emits these kernels under
// --fuse-attention=on.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"

FSDP_CUDA_NAMESPACE_BEGIN

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

FSDP_CUDA_NAMESPACE_END
