//===- OptimizerKernels.cu - AdamW and SGD updates on the GPU --------------===//
//
// torch.optim.AdamW and SGD with the CPU kernels' formulas and roundings
// (runtime/math/OptimizerUpdate.h), one thread per element. lr (f64) and
// step (i64) are device scalars the executor writes before each step, so
// the kernel computes the step's scalars from them (two double pows, once
// per block into shared memory; nothing is read back to the host, and a
// captured graph replays unchanged). Hyperparameters are the decimal doubles the
// CPU kernel uses, computed on the host. In place: results may be their
// operands' buffers. A step below 1 (which the CPU refuses; the executor
// never writes one) is a StepOutOfRange fault and the kernel writes
// nothing, so the update is refused as on the CPU, even for an empty
// tensor (the launch always has a block to read the step). A non-zero
// found_inf flag (dynamic loss scaling; a device scalar like lr) skips the
// update: each result keeps its operand's value, copied when the result
// is another buffer.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"
#include "runtime/math/OptimizerUpdate.h"
#include "runtime/backends/OptimizerOperands.h"


FSDP_CUDA_NAMESPACE_BEGIN
namespace {

constexpr DTypeSet kOptimizerTypes = bitOf(DType::F32) | bitOf(DType::F64);

template <typename T>
__global__ void adamwKernel(AdamWHyper hyper, const double *lr, const int64_t *step,
                            const float *foundInf, const T *p,
                            const T *g, const T *m, const T *v, T *pOut, T *mOut, T *vOut,
                            int64_t n, KernelFault *fault, uint32_t launchId) {
  const int64_t stepNumber = *step;
  if (stepNumber < 1) {
    if (blockIdx.x == 0 && threadIdx.x == 0)
      raiseFault(fault, launchId, FaultCode::StepOutOfRange, stepNumber, 0, 1);
    return;
  }
  if (foundInf && *foundInf != 0.0f) {
    FSDP_GRID_STRIDE(i, n) {
      pOut[i] = p[i];
      mOut[i] = m[i];
      vOut[i] = v[i];
    }
    return;
  }
  // The step's scalars (two double pows) once per block, not per thread.
  // Every thread took the same branches above: the barrier is uniform.
  __shared__ AdamWScalars<T> scalars;
  if (threadIdx.x == 0)
    scalars = adamwScalars<T>(hyper, *lr, stepNumber);
  __syncthreads();
  const AdamWScalars<T> s = scalars;
  FSDP_GRID_STRIDE(i, n) { adamwElement(s, p[i], g[i], m[i], v[i], pOut[i], mOut[i], vOut[i]); }
}

template <typename T>
__global__ void sgdKernel(SgdHyper hyper, const double *lr, const float *foundInf, const T *p,
                          const T *g, const T *b, T *pOut, T *bOut, int64_t n) {
  if (foundInf && *foundInf != 0.0f) {
    FSDP_GRID_STRIDE(i, n) {
      pOut[i] = p[i];
      if (b)
        bOut[i] = b[i];
    }
    return;
  }
  const SgdScalars<T> s = sgdScalars<T>(hyper, *lr);
  FSDP_GRID_STRIDE(i, n) {
    sgdElement(s, p[i], g[i], b ? b + i : nullptr, pOut[i], b ? bOut + i : nullptr);
  }
}

} // namespace

Status adamw(const KernelContext &ctx, const TensorRef &param, const TensorRef &grad,
             const TensorRef &expAvg, const TensorRef &expAvgSq, const TensorRef &lr,
             const TensorRef &step, const AdamWConfig &config, const TensorRef &paramOut,
             const TensorRef &expAvgOut, const TensorRef &expAvgSqOut, const TensorRef *foundInf) {
  const char *op = "adamw";
  FSDP_RETURN_IF_ERROR(checkAdamWOperands(param, grad, expAvg, expAvgSq, lr, step, paramOut,
                                          expAvgOut, expAvgSqOut, foundInf));
  const float *skip = foundInf ? foundInf->as<const float>() : nullptr;
  const AdamWHyper hyper = hyperOf(config);
  const int64_t n = param.numElements();
  return dispatch<kOptimizerTypes>(
      param.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        // Not launchElementwise: an empty tensor still checks the step.
        return launch(ctx, op, adamwKernel<T>, gridFor(n), dim3(kBlockThreads), hyper,
                      lr.as<const double>(), step.as<const int64_t>(), skip, param.as<const T>(),
                      grad.as<const T>(), expAvg.as<const T>(), expAvgSq.as<const T>(),
                      paramOut.as<T>(), expAvgOut.as<T>(), expAvgSqOut.as<T>(), n, ctx.fault,
                      ctx.launch);
      },
      op);
}

Status sgd(const KernelContext &ctx, const TensorRef &param, const TensorRef &grad,
           const TensorRef *momentumBuffer, const TensorRef &lr, const SgdConfig &config,
           const TensorRef &paramOut, const TensorRef *bufferOut, const TensorRef *foundInf) {
  const char *op = "sgd";
  FSDP_RETURN_IF_ERROR(
      checkSgdOperands(param, grad, momentumBuffer, lr, paramOut, bufferOut, foundInf));
  const float *skip = foundInf ? foundInf->as<const float>() : nullptr;
  const SgdHyper hyper = hyperOf(config);
  const int64_t n = param.numElements();
  return dispatch<kOptimizerTypes>(
      param.dtype,
      [&](auto tag) {
        using T = decltype(tag);
        return launchElementwise(ctx, op, n, sgdKernel<T>, hyper, lr.as<const double>(), skip,
                                 param.as<const T>(), grad.as<const T>(),
                                 momentumBuffer ? momentumBuffer->as<const T>() : nullptr,
                                 paramOut.as<T>(), bufferOut ? bufferOut->as<T>() : nullptr, n);
      },
      op);
}

FSDP_CUDA_NAMESPACE_END
