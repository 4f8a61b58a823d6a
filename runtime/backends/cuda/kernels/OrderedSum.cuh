//===- OrderedSum.cuh - a CPU loop's sequential double sums on one block ---===//
//
// The CPU's losses sum per-position terms in double, one position after
// another (LossKernels.cpp, LossGradKernels.cpp); a floating-point sum's
// bits depend on that order, so the CUDA kernels keep it. A single thread
// walking the positions would wait on a global load every step; here the
// block's threads compute kBlockThreads consecutive terms at a time (the
// loads in parallel) into shared memory, and thread 0 adds them in
// increasing position, so only the adds are sequential and they read
// shared memory. A term may be absent (the CPU skips that position), which
// is not the same as adding +0 (-0 + +0 is +0).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_ORDEREDSUM_CUH
#define FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_ORDEREDSUM_CUH

#include "runtime/backends/cuda/kernels/KernelSupport.cuh"

FSDP_CUDA_NAMESPACE_BEGIN

/// sums[k] = the sequential double sum over p in [0, n) of the terms[k]
/// that `term(p, terms)` (returning whether position p has terms; terms
/// start at 0) gives, added in increasing p from +0. Every thread of the
/// block must call it (it synchronizes the block), with blockDim.x at most
/// kBlockThreads; every thread gets the sums.
template <int K, typename Term>
__device__ inline void orderedBlockSums(int64_t n, Term term, double (&sums)[K]) {
  __shared__ double terms[K][kBlockThreads];
  __shared__ bool present[kBlockThreads];
  __shared__ double totals[K];
  if (threadIdx.x == 0)
    for (int k = 0; k < K; ++k)
      totals[k] = 0;
  for (int64_t base = 0; base < n; base += blockDim.x) {
    const int64_t p = base + threadIdx.x;
    double mine[K] = {};
    present[threadIdx.x] = p < n && term(p, mine);
    for (int k = 0; k < K; ++k)
      terms[k][threadIdx.x] = mine[k];
    __syncthreads();
    if (threadIdx.x == 0) {
      const int64_t count = n - base < blockDim.x ? n - base : blockDim.x;
      for (int64_t i = 0; i < count; ++i)
        if (present[i])
          for (int k = 0; k < K; ++k)
            totals[k] += terms[k][i];
    }
    __syncthreads();
  }
  __syncthreads(); // totals written by thread 0 when n == 0
  for (int k = 0; k < K; ++k)
    sums[k] = totals[k];
  __syncthreads(); // no thread resets totals in a later call before all read them
}

FSDP_CUDA_NAMESPACE_END

#endif // FSDP_RUNTIME_BACKENDS_CUDA_KERNELS_ORDEREDSUM_CUH
