//===- CpuDevice.h - the CPU backend's device -----------------------------===//
//
// The CPU backend behind Device (runtime/device/Device.h): host memory,
// one worker thread per stream (CpuStream.h), collectives through the host
// communicators (CpuChannel.h) and kernels through CpuLaunch.h. Drivers
// create it by name ("cpu") through the device registry; tests and the
// offline checkpoint tools, which only ever run on the host, create it
// directly.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_CPUDEVICE_H
#define FSDP_RUNTIME_BACKENDS_CPU_CPUDEVICE_H

#include "runtime/device/Device.h"

#include <cstdint>
#include <memory>

namespace fsdp::rt {

/// The CPU backend (always available; the registry's "cpu").
std::unique_ptr<Device> createCpuDevice();

/// Runs one launch on the host (CpuLaunch.h's signature).
using HostKernelLauncher = Status (*)(const Launch &launch, uint64_t step);

/// The CPU device with another kernel set: host memory, streams and
/// channels as the CPU backend's, kernels run by `launcher` (on host
/// streams the CPU backend's, as on the CUDA device). The CUDA
/// backend's SIMT build is this device with the emulated CUDA kernels
/// (`cuda-simt`), so a plan runs through them exactly as the executor
/// drives a device.
std::unique_ptr<Device> createHostDevice(const char *name, HostKernelLauncher launcher);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_CPU_CPUDEVICE_H
