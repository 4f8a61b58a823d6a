//===- CudaDevice.h - the CUDA backend's device ---------------------------===//
//
// The GPU behind Device (runtime/device/Device.h): device memory from one
// cudaMalloc per plan region, pinned host memory for the Host region,
// streams and events as cudaStream_t and cudaEvent_t, kernels through
// CudaLaunch.h with cuBLAS for the GEMMs, and step capture as CUDA graphs
// (the executor records a step once and replays it, Executor.h). Built
// only with FSDP_ENABLE_CUDA; drivers create it by name ("cuda") through
// the device registry, which also asks countCudaDevices for the default
// device and the GPU count.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICE_H
#define FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICE_H

#include "runtime/device/Device.h"
#include "runtime/device/DeviceRegistry.h"

#include <memory>
#include <string>

namespace fsdp::rt {

/// The GPU `options.ordinal`; an error with CUDA's own message when there
/// is no such GPU or no driver.
Status createCudaDevice(const DeviceOptions &options, std::unique_ptr<Device> &out);

/// The GPUs CUDA sees (cudaGetDeviceCount, which creates no context); 0
/// when there is no GPU or no driver, with CUDA's reason in `why`.
int countCudaDevices(std::string *why = nullptr);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_BACKENDS_CUDA_CUDADEVICE_H
