//===- DeviceRegistry.h - devices by name ---------------------------------===//
//
// How a driver picks a backend (fsdp-run --device=NAME): each backend
// registers a factory under its name, and createDevice builds one by name
// with a clear error for a name that is unknown or whose backend this build
// does not have. The backends built into the runtime register themselves
// the first time the registry is used ("cpu" always; "cuda" when its
// backend lands), so no static initializer order or linker flag is
// involved; registerDevice adds others (tests, out-of-tree backends).
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

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_DEVICE_DEVICEREGISTRY_H
