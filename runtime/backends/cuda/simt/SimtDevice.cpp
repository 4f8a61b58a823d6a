//===- SimtDevice.cpp - the CUDA kernels on the CPU, as a device ----------===//
//
// A launch builds the KernelContext a GPU launch would get, with host
// memory standing in for device memory: the step word and the fault
// record live on this OS thread (each stream's worker runs its launches
// one at a time), and the fault is read right after the launch instead of
// at the end of the step.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cuda/simt/SimtDevice.h"

#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/backends/cuda/CudaLaunch.h"
#include "runtime/plan/KernelTable.h"

namespace fsdp::rt {

Status launchSimtKernel(const Launch &launch, uint64_t step) {
  thread_local uint64_t stepWord;
  thread_local cuda::KernelFault fault;
  stepWord = step;
  fault = {};
  cuda::KernelContext ctx;
  ctx.step = &stepWord;
  ctx.fault = &fault;
  FSDP_RETURN_IF_ERROR(cuda::launchKernel(launch, ctx));
  if (fault.code != 0)
    return Status::error(cuda::describeFault(fault, kernelName(launch.kernel)));
  return Status::ok();
}

std::unique_ptr<Device> createSimtDevice() {
  return createHostDevice("cuda-simt", launchSimtKernel);
}

} // namespace fsdp::rt
