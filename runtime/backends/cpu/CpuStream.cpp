//===- CpuStream.cpp - streams and events of the CPU backend --------------===//
//
// The worker holds the stream's status in a local while it runs a batch
// and publishes it under the lock when the batch is done, so synchronize
// (which waits for pending_ == 0) always reads a settled value. Statuses
// that cross threads are copied by message: a Status shares its text, and
// a later FSDP_RETURN_IF_ERROR on one thread appends to it.
//
//===----------------------------------------------------------------------===//

#include "runtime/backends/cpu/CpuStream.h"

#include <algorithm>
#include <utility>

namespace fsdp::rt::cpu {
namespace {

/// A copy of `status` that shares nothing with it.
Status detached(const Status &status) {
  return status ? Status::ok() : Status::error(status.message());
}

} // namespace

void CpuStreamSet::add(CpuStream *stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.push_back(stream);
}

void CpuStreamSet::remove(CpuStream *stream) {
  std::lock_guard<std::mutex> lock(mutex_);
  streams_.erase(std::find(streams_.begin(), streams_.end(), stream));
}

Status CpuStreamSet::synchronizeAll() {
  std::lock_guard<std::mutex> lock(mutex_);
  Status first;
  for (CpuStream *stream : streams_)
    if (Status s = stream->synchronize(); !s && first)
      first = s;
  return first;
}

CpuStream::CpuStream(CpuStreamSet *set, bool host)
    : set_(set), host_(host), worker_([this] { workerLoop(); }) {
  if (set_)
    set_->add(this);
}

CpuStream::~CpuStream() {
  if (set_)
    set_->remove(this);
  {
    std::lock_guard<std::mutex> lock(mutex_);
    shutdown_ = true;
  }
  wake_.notify_one();
  worker_.join();
}

void CpuStream::enqueue(StreamWork work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    ++pending_;
  }
  wake_.notify_one();
}

Status CpuStream::synchronize() {
  std::unique_lock<std::mutex> lock(mutex_);
  idle_.wait(lock, [&] { return pending_ == 0; });
  Status status = detached(status_);
  status_ = Status::ok();
  return status;
}

void CpuStream::workerLoop() {
  std::vector<StreamWork> batch;
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    wake_.wait(lock, [&] { return shutdown_ || !queue_.empty(); });
    if (queue_.empty())
      return; // shut down with nothing left to run
    batch.swap(queue_);
    Status status = std::move(status_);
    lock.unlock();
    for (StreamWork &work : batch)
      work(status);
    const size_t ran = batch.size();
    batch.clear(); // destroy the work (and what it captured) outside the lock
    lock.lock();
    status_ = std::move(status);
    pending_ -= ran;
    if (pending_ == 0)
      idle_.notify_all();
  }
}

uint64_t CpuEvent::addRecord() {
  std::lock_guard<std::mutex> lock(mutex_);
  return ++recorded_;
}

uint64_t CpuEvent::lastRecord() {
  std::lock_guard<std::mutex> lock(mutex_);
  return recorded_;
}

void CpuEvent::complete(uint64_t sequence, const Status &status) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (sequence > done_)
      done_ = sequence;
    status_ = detached(status);
    if (timing_)
      when_ = std::chrono::steady_clock::now();
  }
  completed_.notify_all();
}

Status CpuEvent::wait(uint64_t sequence) {
  std::unique_lock<std::mutex> lock(mutex_);
  completed_.wait(lock, [&] { return done_ >= sequence; });
  return detached(status_);
}

Status CpuEvent::completedAt(std::chrono::steady_clock::time_point &when) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!timing_)
    return Status::error("elapsedSeconds: the event was not created for timing");
  if (recorded_ == 0 || done_ < recorded_)
    return Status::error("elapsedSeconds: the event has not completed");
  when = when_;
  return Status::ok();
}

} // namespace fsdp::rt::cpu
