//===- CudaKernels.h - the CUDA backend's kernels -------------------------===//
//
// One host function per nn op family, the CUDA counterpart of each function
// of runtime/backends/cpu/CpuKernels.h: the same name, the same operands
// and the same semantics (documented there, not repeated here), plus the
// KernelContext of the launch. Each validates what the CPU kernel validates
// that does not depend on tensor values, picks the instantiation for the
// dtypes and enqueues its kernels on ctx.stream; nothing is allocated. What
// depends on values (indices, labels) is checked inside the kernels and
// reported through ctx.fault (KernelFault.h).
//
// Numerics follow the CPU kernels: the scalar math is the shared FSDP_HD
// code of runtime/math/ (so elementwise results, dropout masks and the
// optimizer updates are the CPU's bits), 16-bit floats compute in float,
// and every reduction runs in a fixed order without atomics, so a run is
// deterministic run to run; row reductions follow the CPU's lane order
// where the family documents it, and otherwise agree within the numerics
// contract. GEMMs go to cuBLAS (the SIMT build runs the same column-major
// call through cblas).
//
// The sources are .cu files under kernels/, compiled by nvcc for the GPU
// and, as host C++ under the SIMT emulation, for the tests (CudaRuntime.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H

#include "runtime/backends/KernelKinds.h"
#include "runtime/backends/cuda/CudaRuntime.h"
#include "runtime/backends/cuda/KernelFault.h"
#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstdint>
#include <optional>

namespace fsdp::rt::cuda {
class GeneratedPtx; // GeneratedPtx.h: the GPU build's only
} // namespace fsdp::rt::cuda

FSDP_CUDA_NAMESPACE_BEGIN

/// What every launch needs besides its operands. Pointers are device
/// memory, written by the device before the step (so a captured CUDA graph
/// replays unchanged: values change, addresses do not).
struct KernelContext {
  cudaStream_t stream = nullptr;
  /// The cuBLAS handle bound to `stream` (nullptr in the SIMT build).
  void *blas = nullptr;
  /// TF32 tensor-core math for f32 GEMMs (fsdp-run --tf32; off by default).
  bool tf32 = false;
  /// The step Device::launch is given (the executor's 1-based step - 1,
  /// Executor::setStep; seeds dropout), written by Device::beginStep.
  const uint64_t *step = nullptr;
  /// The step's first value fault, and this launch's number for it.
  KernelFault *fault = nullptr;
  uint32_t launch = 0;
  /// The kernels generated for the compiled step's Fused chains, loaded by
  /// the device (null: none; always null in the SIMT build).
  const GeneratedPtx *generated = nullptr;
};

// --- Elementwise (kernels/ElementwiseKernels.cu)
Status binary(const KernelContext &ctx, BinaryKind kind, const TensorRef &a, const TensorRef &b,
    const TensorRef &out);
Status where(const KernelContext &ctx, const TensorRef &cond, const TensorRef &x, const TensorRef
    &y, const TensorRef &out);
Status unary(const KernelContext &ctx, UnaryKind kind, const TensorRef &in, const TensorRef &out);
Status cast(const KernelContext &ctx, const TensorRef &in, const TensorRef &out);

// --- Comparisons and logic (kernels/ComparisonKernels.cu)
Status compare(const KernelContext &ctx, ComparePredicate predicate, const TensorRef &a, const
    TensorRef &b, const TensorRef &out);
Status logical(const KernelContext &ctx, LogicalKind kind, const TensorRef &a, const TensorRef &b,
    const TensorRef &out);
Status isNaN(const KernelContext &ctx, const TensorRef &in, const TensorRef &out);
Status isInf(const KernelContext &ctx, const TensorRef &in, bool detectNegative, bool
    detectPositive, const TensorRef &out);

// --- Data movement (kernels/ShapeKernels.cu)
Status copy(const KernelContext &ctx, const TensorRef &in, const TensorRef &out);
Status transpose(const KernelContext &ctx, const TensorRef &in, const int64_t *perm, const TensorRef
    &out);
Status concat(const KernelContext &ctx, const TensorRef *inputs, int count, int64_t axis, const
    TensorRef &out);
Status split(const KernelContext &ctx, const TensorRef &in, int64_t axis, const TensorRef *outputs,
    int count);
Status slice(const KernelContext &ctx, const TensorRef &in, const int64_t *starts, const int64_t
    *steps, const TensorRef &out);
Status expand(const KernelContext &ctx, const TensorRef &in, const TensorRef &out);
Status gather(const KernelContext &ctx, const TensorRef &data, const TensorRef &indices, int64_t
    axis, const TensorRef &out);
Status trilu(const KernelContext &ctx, const TensorRef &in, bool upper, int64_t k, const TensorRef
    &out);
Status flatten(const KernelContext &ctx, const TensorRef *inputs, const int64_t *offsets, int count,
    const TensorRef &out);

// --- Fused elementwise (kernels/FusedKernels.cu)
Status fusedElementwise(const KernelContext &ctx, const TensorRef *inputs, int numInputs, const
    int64_t *ints, int numInts, const TensorRef *outputs, int numOutputs);

// --- Linear algebra (kernels/LinearAlgebraKernels.cu: cuBLAS; GemmMapping.h)
Status matmul(const KernelContext &ctx, const TensorRef &a, const TensorRef &b, const TensorRef
    &out, bool transA, bool transB);
Status gemm(const KernelContext &ctx, const TensorRef &a, const TensorRef &b, const TensorRef *c,
    float alpha, float beta, bool transA, bool transB, const TensorRef &out);

// --- Normalization (kernels/NormalizationKernels.cu)
Status softmax(const KernelContext &ctx, const TensorRef &in, int64_t axis, bool log, const
    TensorRef &out);
Status layerNorm(const KernelContext &ctx, const TensorRef &x, const TensorRef &scale, const
    TensorRef *bias, int64_t axis, float epsilon, const TensorRef &y, const TensorRef &mean, const
    TensorRef &invStdDev);

// --- Attention (kernels/AttentionKernels.cu): the CPU kernels' twin in their
// per-element order (cpu/CpuKernels.h's contract); head dims up to 256.
Status attention(const KernelContext &ctx, const TensorRef &q, const TensorRef &k, const
    TensorRef &v, const TensorRef *mask, bool causal, float scale, const AttentionDropout &dropout,
    const TensorRef &out, const TensorRef &lse);
Status attentionGrad(const KernelContext &ctx, const TensorRef &q, const TensorRef &k, const
    TensorRef &v, const TensorRef *mask, const TensorRef &out, const TensorRef &lse, const
    TensorRef &dout, bool causal, float scale, const AttentionDropout &dropout, const TensorRef &dq,
    const TensorRef &dk, const TensorRef &dv);

// --- Reductions (kernels/ReductionKernels.cu)
Status reduce(const KernelContext &ctx, ReduceKind kind, const TensorRef &in, const int64_t *axes,
    int count, const TensorRef &out);

// --- Losses (kernels/LossKernels.cu)
Status softmaxCrossEntropy(const KernelContext &ctx, const TensorRef &scores, const TensorRef
    &labels, const TensorRef *weights, Reduction reduction, std::optional<int64_t> ignoreIndex,
    const TensorRef &loss, const TensorRef &logProb);
Status nllLoss(const KernelContext &ctx, const TensorRef &input, const TensorRef &target, const
    TensorRef *weight, Reduction reduction, std::optional<int64_t> ignoreIndex, const TensorRef
    &loss);

// --- Dropout (kernels/DropoutKernels.cu): the step comes from ctx.step
Status dropout(const KernelContext &ctx, const TensorRef &in, float ratio, bool training, uint64_t
    seed, const TensorRef &out, const TensorRef &mask);

// --- Gradients (kernels/GradientKernels.cu)
Status activationGrad(const KernelContext &ctx, ActivationGradKind kind, const TensorRef &saved,
    const TensorRef &dy, const TensorRef &dx);
Status softmaxGrad(const KernelContext &ctx, const TensorRef &y, const TensorRef &dy, int64_t axis,
    bool log, const TensorRef &dx);
Status layerNormGrad(const KernelContext &ctx, const TensorRef &x, const TensorRef &scale, const
    TensorRef &mean, const TensorRef &invStdDev, const TensorRef &dy, int64_t axis, const TensorRef
    &dx, const TensorRef &dscale, const TensorRef &dbias);
Status gatherGrad(const KernelContext &ctx, const TensorRef &indices, const TensorRef &dy, int64_t
    axis, const TensorRef &ddata);
Status sliceGrad(const KernelContext &ctx, const TensorRef &dy, const int64_t *starts, const int64_t
    *steps, const TensorRef &dx);
Status reduceMaxGrad(const KernelContext &ctx, const TensorRef &x, const TensorRef &y, const
    TensorRef &dy, const int64_t *axes, int count, const TensorRef &dx);
Status dropoutGrad(const KernelContext &ctx, const TensorRef &dy, const TensorRef &mask, float
    ratio, const TensorRef &dx);

// --- Loss gradients (kernels/LossGradKernels.cu)
Status softmaxCrossEntropyGrad(const KernelContext &ctx, const TensorRef &logProb, const TensorRef
    &labels, const TensorRef *weights, const TensorRef &dloss, Reduction reduction,
    std::optional<int64_t> ignoreIndex, const TensorRef &dscores);
Status nllLossGrad(const KernelContext &ctx, const TensorRef &target, const TensorRef *weight, const
    TensorRef &dloss, Reduction reduction, std::optional<int64_t> ignoreIndex, const TensorRef
    &dinput);

// --- Optimizers (kernels/OptimizerKernels.cu); foundInf as the CPU kernels'
Status adamw(const KernelContext &ctx, const TensorRef &param, const TensorRef &grad, const
    TensorRef &expAvg, const TensorRef &expAvgSq, const TensorRef &lr, const TensorRef &step, const
    AdamWConfig &config, const TensorRef &paramOut, const TensorRef &expAvgOut, const TensorRef
    &expAvgSqOut, const TensorRef *foundInf = nullptr);
Status sgd(const KernelContext &ctx, const TensorRef &param, const TensorRef &grad, const TensorRef
    *momentumBuffer, const TensorRef &lr, const SgdConfig &config, const TensorRef &paramOut, const
    TensorRef *bufferOut, const TensorRef *foundInf = nullptr);

// --- Ops of torch 2.x exports (kernels/TorchExportKernels.cu)
Status math(const KernelContext &ctx, MathKind kind, const TensorRef &in, const TensorRef &out);
Status geluGrad(const KernelContext &ctx, bool tanh, const TensorRef &x, const TensorRef &dy, const
    TensorRef &dx);
Status pad(const KernelContext &ctx, const TensorRef &in, const TensorRef &value, const int64_t
    *pads, const TensorRef &out);
Status tile(const KernelContext &ctx, const TensorRef &in, const TensorRef &out);
Status cumsum(const KernelContext &ctx, const TensorRef &in, int64_t axis, bool exclusive, bool
    reverse, const TensorRef &out);

FSDP_CUDA_NAMESPACE_END

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDAKERNELS_H
