//===- Device.h - the backend-neutral device interface --------------------===//
//
// What the executor needs from a backend, after IREE's HAL: memory that is
// allocated once up front, copies between host and device, execution of one
// planned instruction on a stream, and synchronization. The CPU backend
// (backends/cpu) implements it with host memory and the kernels of
// CpuKernels.h, running each stream's work in order; the CUDA backend of a
// later issue maps streams and events to CUDA's and kernels to cuBLAS and
// its own. Collectives join this interface with the FSDP issue.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_DEVICE_H
#define FSDP_RUNTIME_DEVICE_H

#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fsdp::rt {

/// A block of device memory from Device::allocate.
struct DeviceMemory {
  void *base = nullptr;
  size_t size = 0;
};

/// One instruction with its operands resolved to device memory. Absent
/// optional operands have data == nullptr. Built once when a plan is
/// loaded, so launching allocates nothing.
struct Launch {
  uint16_t kernel = 0; // fsdp::plan::Kernel
  const TensorRef *inputs = nullptr;
  int numInputs = 0;
  const TensorRef *outputs = nullptr;
  int numOutputs = 0;
  const int64_t *ints = nullptr;
  int numInts = 0;
  const float *floats = nullptr;
  int numFloats = 0;
  int stream = 0;
  const char *name = ""; // source location, for error messages
};

class Device {
public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;
  /// Allocates `bytes` (64-byte aligned, zero-filled). Only called while a
  /// plan is being set up, never on the per-step path.
  virtual Status allocate(size_t bytes, DeviceMemory &out) = 0;
  virtual void release(DeviceMemory &memory) = 0;
  /// Host memory the device copies to and from (pinned on a GPU), for a
  /// plan's Host region; the CPU device's memory is host memory already.
  virtual Status allocateHost(size_t bytes, DeviceMemory &out) { return allocate(bytes, out); }
  virtual void releaseHost(DeviceMemory &memory) { release(memory); }
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;
  /// Runs `launch` on its stream; `step` seeds step-dependent kernels
  /// (dropout) so every step draws fresh, reproducible randomness.
  virtual Status execute(const Launch &launch, uint64_t step) = 0;
  /// Returns when every stream has finished its work.
  virtual Status synchronize() = 0;
};

/// The CPU backend (always available).
std::unique_ptr<Device> createCpuDevice();

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_DEVICE_H
