//===- DeviceRegistry.h - devices by name ---------------------------------===//
//
// How a driver picks a backend (fsdp-run --device=NAME): each backend
// registers a factory under its name, and createDevice builds one by name
// with a clear error for a name that is unknown or whose backend this build
// does not have. The backends built into the runtime register themselves
// the first time the registry is used ("cpu" and "cuda-simt" always;
// "cuda" in builds with CUDA), so no static initializer order or linker
// flag is involved; registerDevice adds others (tests, out-of-tree
// backends).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_DEVICE_DEVICEREGISTRY_H
#define FSDP_RUNTIME_DEVICE_DEVICEREGISTRY_H

#include "runtime/device/Device.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace fsdp::rt {

/// What a driver may ask of the device it creates.
struct DeviceOptions {
  /// Which of the machine's devices of that kind (a GPU's index: drivers
  /// pass the rank's index on its node). The CPU backend ignores it.
  int ordinal = 0;
  /// TF32 tensor-core math for f32 GEMMs (fsdp-run --tf32). Only the CUDA
  /// device has it; drivers refuse it for the others rather than ignore it.
  bool tf32 = false;
};

/// Makes a device, or says why it cannot (no such GPU, no driver).
using DeviceFactory =
    std::function<Status(const DeviceOptions &options, std::unique_ptr<Device> &out)>;

/// Registers `factory` under `name`; an error if the name is taken.
Status registerDevice(const std::string &name, DeviceFactory factory);

/// A device of the backend registered as `name`. Errors: a name no backend
/// registered (listing the ones that are), a backend this build lacks, or
/// the factory's own.
Status createDevice(const std::string &name, const DeviceOptions &options,
                    std::unique_ptr<Device> &out);

/// Whether createDevice knows `name`, without creating a device; the same
/// error as createDevice when it does not.
Status checkDeviceName(const std::string &name);

/// The registered names, sorted.
std::vector<std::string> deviceNames();

/// The GPUs of this machine the "cuda" device can use: 0 in a build
/// without CUDA, or without a driver or a GPU (a cheap check: no context).
int cudaDeviceCount();

/// The device a driver runs on when none is named: "cuda" when this build
/// has it and a GPU is present, else "cpu".
std::string defaultDeviceName();

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_DEVICE_DEVICEREGISTRY_H
