//===- CpuLaunch.h - plan kernels to CPU kernel calls ---------------------===//
//
// The CPU backend's one entry from a planned instruction to its kernel:
// decodes the launch's operands and attributes by the plan's kernel
// contract and calls the implementation in CpuKernels.h. The device
// (CpuDevice.cpp) calls it on whichever stream the instruction runs on.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_CPULAUNCH_H
#define FSDP_RUNTIME_BACKENDS_CPU_CPULAUNCH_H

#include "runtime/device/Device.h"

namespace fsdp::rt {

/// Runs `launch` on the calling thread; `step` seeds step-dependent kernels
/// (dropout). Collectives are refused: they run through a communicator.
Status launchCpuKernel(const Launch &launch, uint64_t step);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_CPU_CPULAUNCH_H
