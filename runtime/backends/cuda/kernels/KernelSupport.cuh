//===- KernelSupport.cuh - what every CUDA kernel file shares -------------===//
//
// Launch configuration, the launch itself (the `<<<>>>` that nvcc compiles,
// or the SIMT emulation's launch in the host build), the grid-stride loop
// and fault reporting. Kernel files include this and write their kernels
// as templates over the storage type (runtime/math/ElementTypes.h), using
// only what simt/Simt.h emulates so the tests can run them.
//
// Conventions:
// - 1-D launches of kBlockThreads threads; gridFor(n) caps the grid and
//   kernels loop grid-stride (FSDP_GRID_STRIDE), so any size launches.
// - Reductions are trees of fixed shape (shared memory and warp shuffles)
//   whose order depends only on sizes, never atomics, so results are
//   deterministic run to run.
// - Element offsets and counts are int64_t (tensors above 2^31 elements).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_KERNELSUPPORT_CUH
#define FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_KERNELSUPPORT_CUH

#include "runtime/backends/cuda/CudaKernels.h"
#include "runtime/backends/cuda/LaunchGeometry.h"
#include "runtime/math/ElementTypes.h"
#include "runtime/math/StridedLayout.h"

#include <cstdint>
#include <utility>

FSDP_CUDA_NAMESPACE_BEGIN

/// Blocks for n elements (LaunchGeometry.h: kBlockThreads a block, capped).
inline dim3 gridFor(int64_t n) { return dim3(elementwiseBlocks(n)); }

/// Every element index in [0, n) this thread handles.
#define FSDP_GRID_STRIDE(i, n)                                                                     \
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < (n);                        \
       i += int64_t(blockDim.x) * gridDim.x)

/// Enqueues kernel<<<grid, block>>>(args...) on ctx.stream; a launch the
/// runtime refuses is an error naming `op`.
template <typename... Params, typename... Args>
Status launch(const KernelContext &ctx, const char *op, void (*kernel)(Params...), dim3 grid,
              dim3 block, Args &&...args) {
#if defined(FSDP_SIMT_EMULATION)
  (void)ctx;
  if (const char *error = fsdp::simt::launch(kernel, grid, block, std::forward<Args>(args)...))
    return Status::error(cat(op, ": ", error));
#else
  kernel<<<grid, block, 0, ctx.stream>>>(std::forward<Args>(args)...);
  if (cudaError_t error = cudaGetLastError(); error != cudaSuccess)
    return Status::error(cat(op, ": ", cudaGetErrorString(error)));
#endif
  return Status::ok();
}

/// A 1-D launch over n elements with kBlockThreads threads a block.
template <typename... Params, typename... Args>
Status launchElementwise(const KernelContext &ctx, const char *op, int64_t n,
                         void (*kernel)(Params...), Args &&...args) {
  if (n == 0)
    return Status::ok();
  return launch(ctx, op, kernel, gridFor(n), dim3(kBlockThreads), std::forward<Args>(args)...);
}

/// Records the step's first value fault (later ones are dropped).
__device__ inline void raiseFault(KernelFault *fault, uint32_t launch, FaultCode code,
                                  int64_t value, int64_t position, int64_t limit) {
  if (atomicCAS(&fault->code, 0, static_cast<int32_t>(code)) == 0) {
    fault->launch = launch;
    fault->value = value;
    fault->position = position;
    fault->limit = limit;
  }
}

/// A thread per index of a gather (or its gradient): one outside
/// [-dim, dim) is a fault. Launched on its own where the data movement is
/// empty but the indices are not, since the CPU refuses a bad index before
/// it looks at sizes.
template <typename I>
__global__ void checkIndicesKernel(const I *idx, int64_t count, int64_t dim, KernelFault *fault,
                                   uint32_t launchId) {
  FSDP_GRID_STRIDE(j, count) {
    const int64_t v = static_cast<int64_t>(idx[j]);
    if (v < -dim || v >= dim)
      raiseFault(fault, launchId, FaultCode::IndexOutOfRange, v, j, dim);
  }
}

FSDP_CUDA_NAMESPACE_END

#endif // FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_KERNELSUPPORT_CUH
