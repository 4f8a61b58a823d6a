//===- CudaDevice.cpp - the CUDA backend's device (being written) ---------===//

#include "runtime/backends/cuda/CudaDevice.h"

namespace fsdp::rt {

Status createCudaDevice(const DeviceOptions &, std::unique_ptr<Device> &) {
  return Status::error("the CUDA device is not implemented yet");
}

} // namespace fsdp::rt
