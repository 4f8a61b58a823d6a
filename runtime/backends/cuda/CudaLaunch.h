//===- CudaLaunch.h - plan kernels to CUDA kernel launches -----------------===//
//
// The CUDA backend's decoding of a planned instruction (the shared
// LaunchDecoding.inc calling CudaKernels.h). Enqueues the kernels of one
// instruction on ctx.stream; the Status says whether they were enqueued
// (a refused operand, an unsupported dtype, a launch error), not whether
// they ran: value faults arrive through ctx.fault.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDALAUNCH_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDALAUNCH_H

#include "runtime/backends/cuda/CudaKernels.h"
#include "runtime/device/Device.h"

FSDP_CUDA_NAMESPACE_BEGIN

Status launchKernel(const Launch &launch, const KernelContext &ctx);

FSDP_CUDA_NAMESPACE_END

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDALAUNCH_H
