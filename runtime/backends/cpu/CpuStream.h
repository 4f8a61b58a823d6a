//===- CpuStream.h - streams and events of the CPU backend ----------------===//
//
// A CPU stream is a worker thread with a work queue: the host enqueues and
// returns, the worker runs the work in order. It takes the queue in
// batches (one lock per batch, not per item), so a step the host enqueues
// in one go costs the worker about one wake-up. An event is a counter of
// records with a condition variable: a record enqueued on one stream
// completes it when the worker reaches it, and a wait enqueued on another
// blocks that stream's worker until then. Device.h gives the semantics
// (sticky failures, a wait refers to the last record enqueued before it);
// CpuDevice.cpp builds its operations from these two classes.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_BACKENDS_CPU_CPUSTREAM_H
#define FSDP_RUNTIME_BACKENDS_CPU_CPUSTREAM_H

#include "runtime/device/Device.h"

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace fsdp::rt::cpu {

/// One item of a stream's work. It receives the stream's status (failed
/// once an earlier item failed, until a synchronize reports it): work that
/// computes skips itself when it is failed, so the stream drains; work
/// that orders or communicates reads it (a record hands it to the event, a
/// collective aborts its group), and any item may fail the stream.
using StreamWork = std::function<void(Status &status)>;

class CpuStream;

/// The live streams of one device, for its device-wide synchronize.
class CpuStreamSet {
public:
  void add(CpuStream *stream);
  void remove(CpuStream *stream);
  /// Synchronizes every stream; the first failure. Streams cannot come or
  /// go meanwhile.
  Status synchronizeAll();

private:
  std::mutex mutex_;
  std::vector<CpuStream *> streams_;
};

class CpuStream final : public Stream {
public:
  /// A stream in `set` (if given) from now until it is destroyed; `host`:
  /// a device's host stream (Device::createHostStream), whose launches run
  /// the CPU backend's kernels whatever the device's own.
  explicit CpuStream(CpuStreamSet *set = nullptr, bool host = false);
  /// Runs what is still queued, then stops the worker.
  ~CpuStream() override;

  void enqueue(StreamWork work);
  /// Waits until every enqueued item has run; returns the stream's status
  /// and clears it.
  Status synchronize();
  bool host() const { return host_; }

private:
  void workerLoop();

  std::mutex mutex_;
  std::condition_variable wake_; // work arrived, or shutdown
  std::condition_variable idle_; // pending_ reached 0
  std::vector<StreamWork> queue_;
  size_t pending_ = 0; // enqueued, not yet finished
  bool shutdown_ = false;
  Status status_; // written by the worker between batches, under mutex_
  CpuStreamSet *set_;
  const bool host_;
  std::thread worker_;
};

class CpuEvent final : public Event {
public:
  explicit CpuEvent(bool timing = false) : timing_(timing) {}
  /// Host side: a record is being enqueued; its sequence number.
  uint64_t addRecord();
  /// Host side: the last record enqueued (0: never recorded).
  uint64_t lastRecord();
  /// Worker side: record `sequence` was reached on a stream of `status`.
  void complete(uint64_t sequence, const Status &status);
  /// Worker side: blocks until record `sequence` completed; the status it
  /// completed with.
  Status wait(uint64_t sequence);
  /// Host side: when the latest record completed, for a timing event
  /// whose every enqueued record has completed.
  Status completedAt(std::chrono::steady_clock::time_point &when);

private:
  const bool timing_;
  std::mutex mutex_;
  std::condition_variable completed_;
  uint64_t recorded_ = 0, done_ = 0;
  Status status_;
  std::chrono::steady_clock::time_point when_;
};

} // namespace fsdp::rt::cpu

#endif // FSDP_RUNTIME_BACKENDS_CPU_CPUSTREAM_H
