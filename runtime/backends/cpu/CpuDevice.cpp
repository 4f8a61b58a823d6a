//===- CpuDevice.cpp - the CPU backend ------------------------------------===//
//
// Host memory, memcpy for transfers, streams and events from CpuStream.h,
// kernels through CpuLaunch.cpp (the kernel contract's CPU decoding) or the
// launcher a host device was made with (host streams always run the CPU's),
// run by the worker of the stream they were launched on, and channels that run
// a host communicator's collectives on a stream (CpuChannel.h). The device
// keeps its live streams in a set for the device-wide synchronize.
// Progress marks are atomic flags a stream's worker sets when it reaches
// them (release), which the watchdog's thread reads (acquire).
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuDevice.h"

#include "runtime/backends/cpu/CpuChannel.h"
#include "runtime/backends/cpu/CpuLaunch.h"
#include "runtime/backends/cpu/CpuStream.h"
#include "runtime/backends/cpu/KernelThreads.h"
#include "runtime/device/Device.h"
#include "runtime/plan/PlanFile.h"

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace fsdp::rt {
namespace {

class CpuMarkSet final : public MarkSet {
public:
  explicit CpuMarkSet(size_t count) : marks_(count) { clear(); }
  size_t size() const override { return marks_.size(); }
  bool isSet(size_t index) const override {
    return marks_[index].load(std::memory_order_acquire) != 0;
  }
  void clear() override {
    for (std::atomic<uint8_t> &mark : marks_)
      mark.store(0, std::memory_order_relaxed);
  }
  void set(size_t index) { marks_[index].store(1, std::memory_order_release); }

private:
  std::vector<std::atomic<uint8_t>> marks_;
};

class CpuDevice final : public Device {
public:
  CpuDevice(const char *name, HostKernelLauncher launcher)
      : name_(name), launcher_(launcher),
        threads_(std::make_unique<cpu::KernelThreads>(cpu::rankKernelThreads())) {}

  const char *name() const override { return name_; }

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

  // An empty tensor's copy may have null pointers, which memcpy must not
  // be given even for 0 bytes (UBSan, NodeConformance).
  Status copyToDevice(void *dst, const void *src, size_t bytes) override {
    if (bytes != 0)
      std::memcpy(dst, src, bytes);
    return Status::ok();
  }

  Status copyToHost(void *dst, const void *src, size_t bytes) override {
    if (bytes != 0)
      std::memcpy(dst, src, bytes);
    return Status::ok();
  }

  Status createStream(std::unique_ptr<Stream> &out) override {
    out = std::make_unique<cpu::CpuStream>(&streams_);
    return Status::ok();
  }

  // Another worker; it runs the CPU's kernels, as the CUDA device's host
  // stream does (the same kernels as every stream on the "cpu" device).
  Status createHostStream(std::unique_ptr<Stream> &out) override {
    out = std::make_unique<cpu::CpuStream>(&streams_, /*host=*/true);
    return Status::ok();
  }

  Status createEvent(EventFlags flags, std::unique_ptr<Event> &out) override {
    out = std::make_unique<cpu::CpuEvent>(flags == EventFlags::Timing);
    return Status::ok();
  }

  Status recordEvent(Stream &stream, Event &event) override {
    auto &e = static_cast<cpu::CpuEvent &>(event);
    const uint64_t sequence = e.addRecord();
    queue(stream).enqueue([&e, sequence](Status &status) { e.complete(sequence, status); });
    return Status::ok();
  }

  Status waitEvent(Stream &stream, Event &event) override {
    auto &e = static_cast<cpu::CpuEvent &>(event);
    const uint64_t sequence = e.lastRecord();
    if (sequence == 0)
      return Status::ok(); // never recorded: complete
    queue(stream).enqueue([&e, sequence](Status &status) {
      // A failed stream skips its work anyway; it need not wait.
      if (!status)
        return;
      Status recorded = e.wait(sequence);
      if (!recorded)
        status = recorded;
    });
    return Status::ok();
  }

  Status copyAsync(Stream &stream, void *dst, const void *src, size_t bytes, CopyKind) override {
    if (dst == src || bytes == 0)
      return Status::ok();
    queue(stream).enqueue([dst, src, bytes](Status &status) {
      if (status)
        std::memcpy(dst, src, bytes);
    });
    return Status::ok();
  }

  Status launch(Stream &stream, const Launch &l, uint64_t step) override {
    cpu::CpuStream &q = queue(stream);
    q.enqueue([&l, step, launcher = q.host() ? launchCpuKernel : launcher_,
               threads = threads_.get()](Status &status) {
      if (!status)
        return;
      // The kernel's parallelFor runs on this rank's pool (KernelThreads.h).
      cpu::KernelThreads::Scope scope(threads);
      if (Status s = launcher(l, step); !s)
        status = Status::error(std::string(l.name) + ": " + s.message());
    });
    return Status::ok();
  }

  Status synchronize(Stream &stream) override { return queue(stream).synchronize(); }

  Status synchronize() override { return streams_.synchronizeAll(); }

  Status elapsedSeconds(Event &start, Event &end, double &seconds) override {
    std::chrono::steady_clock::time_point from, to;
    FSDP_RETURN_IF_ERROR(static_cast<cpu::CpuEvent &>(start).completedAt(from));
    FSDP_RETURN_IF_ERROR(static_cast<cpu::CpuEvent &>(end).completedAt(to));
    seconds = std::chrono::duration<double>(to - from).count();
    return Status::ok();
  }

  Status createMarks(size_t count, std::unique_ptr<MarkSet> &out) override {
    out = std::make_unique<CpuMarkSet>(count);
    return Status::ok();
  }

  Status setMark(Stream &stream, MarkSet &marks, size_t index) override {
    auto &m = static_cast<CpuMarkSet &>(marks);
    if (index >= m.size())
      return Status::error(cat("cpu: setMark: mark ", index, " of ", m.size()));
    queue(stream).enqueue([&m, index](Status &) { m.set(index); });
    return Status::ok();
  }

  Status createChannel(Communicator &group, std::unique_ptr<Channel> &out) override {
    out = cpu::createCpuChannel(group);
    return Status::ok();
  }

private:
  /// Streams handed to this device are its own, which are CPU streams.
  static cpu::CpuStream &queue(Stream &stream) { return static_cast<cpu::CpuStream &>(stream); }

  const char *name_;
  HostKernelLauncher launcher_;
  /// The rank's intra-op threads; declared before the streams, so
  /// destroyed after them (their queued kernels may use it).
  std::unique_ptr<cpu::KernelThreads> threads_;
  cpu::CpuStreamSet streams_;
};

} // namespace

std::unique_ptr<Device> createCpuDevice() {
  return std::make_unique<CpuDevice>("cpu", launchCpuKernel);
}

std::unique_ptr<Device> createHostDevice(const char *name, HostKernelLauncher launcher) {
  return std::make_unique<CpuDevice>(name, launcher);
}

} // namespace fsdp::rt
