//===- CpuDevice.cpp - the CPU backend ------------------------------------===//
//
// Host memory, memcpy for transfers, and kernels launched on the calling
// thread through CpuLaunch.cpp (the kernel contract's CPU decoding). Work
// runs in program order on the caller's thread, so synchronize is
// immediate; the executor orders a plan's two streams with its own events.
//
//===----------------------------------------------------------------------===//

#include "runtime/device/Device.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/backends/cpu/CpuLaunch.h"

#include <cstdlib>
#include <cstring>

namespace fsdp::rt {
namespace {

class CpuDevice final : public Device {
public:
  const char *name() const override { return "cpu"; }

  Status allocate(size_t bytes, DeviceMemory &out) override {
    void *p = nullptr;
    if (posix_memalign(&p, kBufferAlignment, bytes == 0 ? kBufferAlignment : bytes) != 0)
      return Status::error(cat("cpu: cannot allocate ", bytes, " bytes"));
    std::memset(p, 0, bytes);
    out = {p, bytes};
    return Status::ok();
  }

  void release(DeviceMemory &memory) override {
    std::free(memory.base);
    memory = {};
  }

  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    std::memcpy(dst, src, bytes);
    return Status::ok();
  }

  Status synchronize() override { return Status::ok(); }

  Status execute(const Launch &l, uint64_t step) override {
    Status status = launchCpuKernel(l, step);
    if (!status.isOk())
      return Status::error(std::string(l.name) + ": " + status.message());
    return status;
  }

};

} // namespace

std::unique_ptr<Device> createCpuDevice() { return std::make_unique<CpuDevice>(); }

} // namespace fsdp::rt
