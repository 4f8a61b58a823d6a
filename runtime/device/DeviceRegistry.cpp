//===- DeviceRegistry.cpp - devices by name -------------------------------===//
//
// One process-wide table behind a mutex (drivers create a device per rank
// thread). Backends the design names but this build lacks are listed
// apart, so asking for one says "not available in this build" rather than
// "unknown": a user who read --device=cuda in the docs learns the build,
// not the spelling, is the problem.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/DeviceRegistry.h"
#include "runtime/backends/cpu/CpuDevice.h"
#include "runtime/backends/cuda/simt/SimtDevice.h"
#if defined(FSDP_HAVE_CUDA)
#include "runtime/backends/cuda/CudaDevice.h"
#endif

#include <map>
#include <mutex>

namespace fsdp::rt {
namespace {

/// Backends that are designed but not in this build, and why.
struct Planned {
  const char *name;
  const char *why;
};
constexpr Planned kPlanned[] = {
    {"cuda", "it was configured without CUDA (no nvcc, or -DFSDP_ENABLE_CUDA=OFF)"},
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, DeviceFactory> factories;

  Registry() {
    // The built-in backends.
    // Every rank's CPU device is the same host: the ordinal names nothing.
    factories["cpu"] = [](const DeviceOptions &, std::unique_ptr<Device> &out) {
      out = createCpuDevice();
      return Status::ok();
    };
    // The CUDA kernels under emulation on the CPU (for tests without a GPU).
    factories["cuda-simt"] = [](const DeviceOptions &, std::unique_ptr<Device> &out) {
      out = createSimtDevice();
      return Status::ok();
    };
#if defined(FSDP_HAVE_CUDA)
    factories["cuda"] = [](const DeviceOptions &options, std::unique_ptr<Device> &out) {
      return createCudaDevice(options, out);
    };
#endif
  }

  std::string names() {
    std::string list;
    for (const auto &entry : factories)
      list += (list.empty() ? "" : ", ") + entry.first;
    return list;
  }

  /// The factory for `name` (mutex held), or the error createDevice gives.
  Status find(const std::string &name, DeviceFactory &out) {
    auto it = factories.find(name);
    if (it != factories.end()) {
      out = it->second;
      return Status::ok();
    }
    for (const Planned &planned : kPlanned)
      if (name == planned.name)
        return Status::error(cat("device '", name, "' is not available in this build: ",
                                 planned.why, " (available: ", names(), ")"));
    return Status::error(cat("unknown device '", name, "' (available: ", names(), ")"));
  }
};

Registry &registry() {
  static Registry instance;
  return instance;
}

} // namespace

Status registerDevice(const std::string &name, DeviceFactory factory) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  if (name.empty() || !factory)
    return Status::error("registerDevice: a device needs a name and a factory");
  if (!r.factories.emplace(name, std::move(factory)).second)
    return Status::error(cat("device '", name, "' is already registered"));
  return Status::ok();
}

Status checkDeviceName(const std::string &name) {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  DeviceFactory factory;
  return r.find(name, factory);
}

Status createDevice(const std::string &name, const DeviceOptions &options,
                    std::unique_ptr<Device> &out) {
  DeviceFactory factory;
  {
    Registry &r = registry();
    std::lock_guard<std::mutex> lock(r.mutex);
    if (Status s = r.find(name, factory); !s)
      return s; // a user's error: no source location

  }
  // Outside the lock: a factory may take long (a GPU context) and ranks
  // create their devices concurrently.
  return factory(options, out);
}

int cudaDeviceCount() {
#if defined(FSDP_HAVE_CUDA)
  return countCudaDevices();
#else
  return 0;
#endif
}

std::string defaultDeviceName() { return cudaDeviceCount() > 0 ? "cuda" : "cpu"; }

std::vector<std::string> deviceNames() {
  Registry &r = registry();
  std::lock_guard<std::mutex> lock(r.mutex);
  std::vector<std::string> names;
  for (const auto &entry : r.factories)
    names.push_back(entry.first);
  return names;
}

} // namespace fsdp::rt
