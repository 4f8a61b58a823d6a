//===- Device.h - the backend-neutral device interface --------------------===//
//
// What the executor needs from a backend, after IREE's HAL and CUDA's
// runtime: memory allocated once up front, streams that run their work in
// the order it was enqueued, events that order one stream after another,
// asynchronous copies and kernel launches enqueued on a stream, and
// synchronization of one stream or the whole device. Collectives are a
// Channel (Channel.h) bound to the device, enqueued on its streams the same
// way. The CPU backend (backends/cpu) runs each stream on a worker thread;
// the CUDA backend of a later issue maps Stream and Event to cudaStream_t
// and cudaEvent_t one to one, which is why the semantics below are CUDA's:
//
// - Enqueueing never blocks on the device's work. A failure on a stream is
//   sticky: the stream skips its later work until a synchronize of it (or of
//   the device) reports the failure, which also clears it.
// - recordEvent captures the work enqueued on the stream so far; waitEvent
//   makes later work on another stream wait for the most recent record
//   enqueued before the wait (a never-recorded event is complete). So a
//   host that enqueues a record before every wait on it never deadlocks.
//   A record reached on a failed stream completes the event with that
//   failure, and a stream that waits on it fails too: an error crosses
//   streams instead of leaving a stream waiting (IREE's failed semaphores).
// - Streams, events and channels belong to the device that made them and
//   must be destroyed before it, with no work outstanding.
//
// Devices are created by name through DeviceRegistry.h.
//
// Progress marks: host-visible flags a stream sets in its order
// (setMark), how the collective watchdog (runtime/exec/CollectiveWatchdog.h)
// sees that a collective has started or finished on a device whose
// streams the host cannot look into. Every backend implements them.
//
// Two optional parts, which the CPU backend does not need and leaves at
// their defaults: a per-step hook (beginStep: the step number a GPU's
// kernels read from device memory) and step capture (CUDA graphs: the work
// one step enqueues on the device's streams, recorded once and replayed as
// one launch per step; the executor decides when, Executor.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_DEVICE_DEVICE_H
#define FSDP_RUNTIME_DEVICE_DEVICE_H

#include "runtime/support/Status.h"
#include "runtime/support/TensorRef.h"

#include <cstddef>
#include <cstdint>
#include <memory>

namespace fsdp::rt {

class Channel;
class Communicator;

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
  const char *name = ""; // source location, for error messages
};

/// An in-order queue of device work (cudaStream_t; an IREE HAL queue). Only
/// its device creates one and operates on it.
class Stream {
public:
  virtual ~Stream() = default;
};

/// A point in a stream's work that other streams can wait for
/// (cudaEvent_t; an IREE HAL semaphore).
class Event {
public:
  virtual ~Event() = default;
};

/// A step's work recorded by Device::beginCapture/endCapture, replayed by
/// Device::replay (cudaGraphExec_t). Belongs to its device, like a stream.
class Graph {
public:
  virtual ~Graph() = default;
};

/// Host-visible flags that streams set in their order (Device::setMark):
/// the host polls them without synchronizing anything. A mark stays set
/// until clear(). Belongs to its device, like a stream.
class MarkSet {
public:
  virtual ~MarkSet() = default;
  virtual size_t size() const = 0;
  /// Whether mark `index` was set since the last clear(); from any thread.
  virtual bool isSet(size_t index) const = 0;
  /// Unsets every mark; only while no setMark of this set is outstanding
  /// (the streams it was enqueued on are synchronized).
  virtual void clear() = 0;
};

/// What a device says about its memory (cudaMemGetInfo): what is free and
/// what it has, and how much of what is in use allocate() did not hand out
/// (a GPU's context, library workspaces, allocation rounding, and any
/// other process on the same GPU: it is measured, not accounted).
struct DeviceMemoryInfo {
  size_t freeBytes = 0;
  size_t totalBytes = 0;
  size_t overheadBytes = 0;
};

/// What an event is for: ordering streams only, or also timing the work
/// between two of them (cudaEventDisableTiming is the default's cost).
enum class EventFlags : uint8_t { None, Timing };

/// Which memories an asynchronous copy moves between (cudaMemcpyKind).
/// Host memory must stay valid until the copy's stream is synchronized.
enum class CopyKind : uint8_t { HostToDevice, DeviceToHost, DeviceToDevice };

class Device {
public:
  virtual ~Device() = default;
  virtual const char *name() const = 0;

  // --- Memory. Allocation happens while a plan is set up, never per step.

  /// Allocates `bytes` (64-byte aligned, zero-filled).
  virtual Status allocate(size_t bytes, DeviceMemory &out) = 0;
  virtual void release(DeviceMemory &memory) = 0;
  /// Host memory the device copies to and from (pinned on a GPU), for a
  /// plan's Host region; the CPU device's memory is host memory already.
  virtual Status allocateHost(size_t bytes, DeviceMemory &out) { return allocate(bytes, out); }
  virtual void releaseHost(DeviceMemory &memory) { release(memory); }
  /// Blocking copies (cudaMemcpy), for setup and for state moved between
  /// steps; no stream may be using the memory at the time.
  virtual Status copyToDevice(void *dst, const void *src, size_t bytes) = 0;
  virtual Status copyToHost(void *dst, const void *src, size_t bytes) = 0;

  // --- Streams and events.

  virtual Status createStream(std::unique_ptr<Stream> &out) = 0;
  /// A stream whose work runs on the host, a thread of its own (a plan's
  /// host stream: optimizer updates of Host-region buffers, PlanCheck.h).
  /// Its launches run the host's kernels on host memory (allocateHost);
  /// it waits for other streams' events like any stream, but a device may
  /// refuse a wait of another stream on an event recorded on it (the CUDA
  /// device does: a GPU cannot wait for a host thread). By default any
  /// stream: the CPU device's streams are host threads already.
  virtual Status createHostStream(std::unique_ptr<Stream> &out) { return createStream(out); }
  virtual Status createEvent(EventFlags flags, std::unique_ptr<Event> &out) = 0;
  /// Enqueues on `stream`: `event` completes once the work enqueued so far
  /// on it has (cudaEventRecord).
  virtual Status recordEvent(Stream &stream, Event &event) = 0;
  /// Enqueues on `stream`: later work waits for the most recent record of
  /// `event` enqueued before this call (cudaStreamWaitEvent).
  virtual Status waitEvent(Stream &stream, Event &event) = 0;
  /// Enqueues a copy of `bytes` from `src` to `dst` (cudaMemcpyAsync). The
  /// ranges must not overlap unless they are equal.
  virtual Status copyAsync(Stream &stream, void *dst, const void *src, size_t bytes,
                           CopyKind kind) = 0;
  /// Enqueues `launch`; `step` seeds step-dependent kernels (dropout) so
  /// every step draws fresh, reproducible randomness. A kernel's failure is
  /// the stream's, prefixed with the launch's name. `launch` and the arrays
  /// it points to must stay valid until the stream is synchronized (the
  /// executor's are built once per plan).
  virtual Status launch(Stream &stream, const Launch &launch, uint64_t step) = 0;
  /// Returns when the work enqueued on `stream` has finished, with the
  /// stream's first failure since its last synchronize (then cleared).
  virtual Status synchronize(Stream &stream) = 0;
  /// synchronize() of every stream of the device; the first failure found.
  virtual Status synchronize() = 0;
  /// The device time between the completions of two timing events'
  /// latest records, once both have completed (cudaEventElapsedTime);
  /// negative when `end` completed first.
  virtual Status elapsedSeconds(Event &start, Event &end, double &seconds) = 0;

  /// Enqueues on `stream` what the device needs to know before step
  /// `step`'s work (the value launch() is given as `step`): the CUDA device
  /// copies it into the device word its kernels read, so a captured step
  /// replays with the new value. Work on other streams sees it once ordered
  /// after it by an event; one call per synchronize (the copy reads its
  /// source when it runs). The executor calls it first in every step, on
  /// the plan's compute stream (stream 0). Nothing by default (the CPU's
  /// kernels take the step from launch()).
  virtual Status beginStep(Stream &stream, uint64_t step);

  /// Device memory: free, total and overhead bytes. An error on devices
  /// whose memory is the host's (the CPU's), which have nothing to report.
  virtual Status memoryInfo(DeviceMemoryInfo &out);

  // --- Step capture (CUDA graphs). Unsupported by default.

  /// Whether beginCapture/endCapture/replay work on this device.
  virtual bool canCapture() const { return false; }
  /// Starts recording: from now until endCapture, work enqueued on
  /// `streams[0..count)` is recorded instead of run, with the order the
  /// events give it. streams[0] is the origin, which the replay is
  /// enqueued on; every other stream joins the recording at once (it waits
  /// for the origin's start) and rejoins the origin at endCapture. The
  /// recorded work may not wait for events recorded before the capture,
  /// and nothing but these streams may be used until endCapture.
  virtual Status beginCapture(Stream *const *streams, size_t count);
  /// Ends the recording begun by beginCapture; `out` replays it. Always
  /// ends the capture, even when it fails (a stream that failed while
  /// recording fails the capture with its error).
  virtual Status endCapture(std::unique_ptr<Graph> &out);
  /// Enqueues `graph`'s work on `stream` (cudaGraphLaunch): the recorded
  /// streams' work, with the same operands, in the order recorded.
  virtual Status replay(Stream &stream, Graph &graph);

  // --- Progress marks (the collective watchdog).

  /// `count` marks, all unset.
  virtual Status createMarks(size_t count, std::unique_ptr<MarkSet> &out);
  /// Enqueues on `stream`: mark `index` of `marks` is set once the work
  /// enqueued on `stream` before it has finished, failed or not (a failed
  /// stream still sets it: the host watches progress, not results). Legal
  /// while capturing: every replay of the graph sets it again.
  virtual Status setMark(Stream &stream, MarkSet &marks, size_t index);

  // --- Collectives.

  /// A channel (Channel.h) for this device over the ranks of `group`, the
  /// host-side group it is set up from (NCCL exchanges its unique id over
  /// it; the CPU channel runs the group's own collectives). Collective over
  /// `group`; it must outlive the channel.
  virtual Status createChannel(Communicator &group, std::unique_ptr<Channel> &out);
};

inline Status Device::beginStep(Stream &, uint64_t) { return Status::ok(); }

inline Status Device::memoryInfo(DeviceMemoryInfo &) {
  return Status::error(cat("device '", name(), "' has no memory of its own to report"));
}

inline Status Device::beginCapture(Stream *const *, size_t) {
  return Status::error(cat("device '", name(), "' cannot capture a step"));
}

inline Status Device::endCapture(std::unique_ptr<Graph> &) {
  return Status::error(cat("device '", name(), "' cannot capture a step"));
}

inline Status Device::replay(Stream &, Graph &) {
  return Status::error(cat("device '", name(), "' cannot replay a step"));
}

inline Status Device::createMarks(size_t, std::unique_ptr<MarkSet> &) {
  return Status::error(cat("device '", name(), "' has no progress marks"));
}

inline Status Device::setMark(Stream &, MarkSet &, size_t) {
  return Status::error(cat("device '", name(), "' has no progress marks"));
}

inline Status Device::createChannel(Communicator &, std::unique_ptr<Channel> &) {
  return Status::error(cat("device '", name(), "' has no collectives"));
}

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_DEVICE_DEVICE_H
