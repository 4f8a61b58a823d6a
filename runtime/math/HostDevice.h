//===- HostDevice.h - scalar code shared by the CPU and CUDA backends -----===//
//
// The scalar math both backends must compute bit for bit alike (the exp/erf
// /tanh approximations, activations, 16-bit float rounding, the dropout
// generator, the optimizer updates) is written once, in headers under
// runtime/math/, as functions marked FSDP_HD: `__host__ __device__` when
// nvcc compiles them into CUDA kernels, plain inline functions when g++
// compiles them into the CPU kernels or into the CUDA kernels' host build
// under SIMT emulation (runtime/backends/cuda/simt/). FSDP_HD_INLINE also
// forces inlining: a call inside a CPU loop would stop it from vectorizing.
// Both builds disable floating-point contraction for this code (CPU:
// -ffp-contract=off where it matters; CUDA: -fmad=false), so a product and
// a sum round separately on both, and explicit fma() calls are the only
// fused operations.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_MATH_HOSTDEVICE_H
#define FSDP_RUNTIME_MATH_HOSTDEVICE_H

#if defined(__CUDACC__)
#define FSDP_HD __host__ __device__
#define FSDP_HD_INLINE __host__ __device__ __forceinline__
#else
#define FSDP_HD
#define FSDP_HD_INLINE __attribute__((always_inline)) inline
#endif

#endif // FSDP_RUNTIME_MATH_HOSTDEVICE_H
