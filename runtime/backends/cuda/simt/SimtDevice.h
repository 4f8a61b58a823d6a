//===- SimtDevice.h - the CUDA kernels on the CPU, as a device ------------===//
//
// `cuda-simt`: the CPU device's memory, streams and channels with the CUDA
// backend's kernels (their SIMT build) as its kernels. fsdp-run
// --device=cuda-simt runs any plan through the CUDA kernel sources on a
// machine without a GPU, and the tests compare it with the CPU backend
// (slow: every CUDA thread is a fiber; for proving kernels, not training).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_SIMT_SIMTDEVICE_H
#define FSDP_RUNTIME_BACKENDS_CUDA_SIMT_SIMTDEVICE_H

#include "runtime/device/Device.h"

#include <memory>

namespace fsdp::rt {

std::unique_ptr<Device> createSimtDevice();

/// Runs one launch through the emulated CUDA kernels, synchronously, and
/// returns its value fault (KernelFault.h) as an error.
Status launchSimtKernel(const Launch &launch, uint64_t step);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_CUDA_SIMT_SIMTDEVICE_H
