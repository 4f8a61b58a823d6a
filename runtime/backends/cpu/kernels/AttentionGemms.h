//===- AttentionGemms.h - 16-bit attention through oneDNN block products --===//
//
// The route nn.attention's CPU kernels take for bf16 and f16 operands
// (AttentionGemms.cpp): the same flash-style tiling as the exact
// kernels of AttentionKernels.cpp, but each block's five products (scores,
// dout·v, and the p·v, dv, dk, dq accumulations) run as oneDNN matmuls on
// 16-bit operands with f32 accumulation, as torch's CPU flash kernel runs
// them through its BLAS. The probabilities and ds that enter a product are
// rounded to the operand type first (torch does the same). Sums are
// oneDNN's, not the exact kernels' sequential order, so the two routes
// agree within the 16-bit tolerance, not bit for bit; within a route the
// bits depend on the shapes alone (not on the thread count), so sharded,
// checkpointed and unsharded runs stay bitwise equal. FSDP_CPU_GEMM=widen
// or naive (GemmLibrary.h) keeps the exact kernels, whose bits the CUDA
// twin reproduces under SIMT; dropout, and a CPU where oneDNN does not take
// the type, keep them too.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ATTENTIONGEMMS_H
#define FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ATTENTIONGEMMS_H

#include "runtime/backends/AttentionShape.h"
#include "runtime/support/DType.h"
#include "runtime/support/Status.h"

namespace fsdp::rt::cpu {

/// Whether attention `n` in `dtype` takes the oneDNN route: a 16-bit type
/// oneDNN runs on this CPU, FSDP_CPU_GEMM's default route, no dropout.
/// An error names a bad FSDP_CPU_GEMM.
Status attentionTakesGemms(DType dtype, const AttentionShape &n, bool &gemms);

/// The forward: out (T) and the rows' lse (f32) of q, k, v (T, [B, H, T, D]
/// contiguous), as the exact kernel defines them.
template <typename T>
Status attentionByGemms(const AttentionShape &n, float scale, const T *q, const T *k, const T *v,
                        T *out, float *lse);

/// The backward: dq, dk, dv (T) from the forward's out and lse and dout.
template <typename T>
Status attentionGradByGemms(const AttentionShape &n, float scale, const T *q, const T *k,
                            const T *v, const T *out, const float *lse, const T *dout, T *dq,
                            T *dk, T *dv);

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_KERNELS_ATTENTIONGEMMS_H
