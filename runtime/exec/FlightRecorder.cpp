//===- FlightRecorder.cpp - the last collectives of one rank --------------===//
//
// The ring is a vector of `capacity` entries; sequence s lives in slot
// (s - 1) % capacity, so finding an entry is one comparison of the
// sequence it holds, and an update for an overwritten entry is dropped.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/FlightRecorder.h"

#include "runtime/support/ByteSize.h"
#include "runtime/support/Status.h"
#include "runtime/train/TrainLog.h"

#include <algorithm>
#include <cstdio>

namespace fsdp::rt {

namespace {

std::string seconds(double t) {
  if (t < 0)
    return "-";
  char text[32];
  std::snprintf(text, sizeof(text), "%.3f", t);
  return text;
}

} // namespace

std::string CollectiveRecord::describe() const {
  return cat(step > 0 ? cat("step ", step) : std::string("start-up"), ": ", kind,
             unit == "-" ? std::string() : " of unit " + unit, " (",
             bytes == kUnknownBytes ? std::string() : formatBytes(bytes) + ", ", "group ", group,
             ")");
}

FlightRecorder::FlightRecorder(size_t capacity)
    : start_(std::chrono::steady_clock::now()), ring_(capacity == 0 ? 1 : capacity) {}

double FlightRecorder::now() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

uint64_t FlightRecorder::add(CollectiveRecord record) {
  std::lock_guard<std::mutex> lock(mutex_);
  record.sequence = next_++;
  ring_[(record.sequence - 1) % ring_.size()] = std::move(record);
  return next_ - 1;
}

CollectiveRecord *FlightRecorder::slot(uint64_t sequence) {
  if (sequence == 0 || sequence >= next_)
    return nullptr;
  CollectiveRecord &r = ring_[(sequence - 1) % ring_.size()];
  return r.sequence == sequence ? &r : nullptr;
}

void FlightRecorder::markStarted(uint64_t sequence, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (CollectiveRecord *r = slot(sequence); r && r->started < 0)
    r->started = seconds;
}

void FlightRecorder::markFinished(uint64_t sequence, double seconds) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (CollectiveRecord *r = slot(sequence); r && r->finished < 0)
    r->finished = seconds;
}

bool FlightRecorder::find(uint64_t sequence, CollectiveRecord &out) const {
  std::lock_guard<std::mutex> lock(mutex_);
  const CollectiveRecord *r = const_cast<FlightRecorder *>(this)->slot(sequence);
  if (r)
    out = *r;
  return r != nullptr;
}

std::vector<CollectiveRecord> FlightRecorder::entries() const {
  std::lock_guard<std::mutex> lock(mutex_);
  std::vector<CollectiveRecord> out;
  const uint64_t count = std::min<uint64_t>(next_ - 1, ring_.size());
  for (uint64_t s = next_ - count; s < next_; ++s)
    out.push_back(ring_[(s - 1) % ring_.size()]);
  return out;
}

uint64_t FlightRecorder::recorded() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return next_ - 1;
}

std::string FlightRecorder::format(int rank) const {
  std::vector<CollectiveRecord> all = entries();
  std::string text = cat("rank ", rank, ": last ", all.size(),
                         " collectives (oldest first; seconds since the run started)\n");
  for (const CollectiveRecord &r : all)
    text += cat("  #", r.sequence, " ", r.describe(), ": issued ", seconds(r.issued),
                ", started ", seconds(r.started), ", finished ", seconds(r.finished), "\n");
  return text;
}

} // namespace fsdp::rt
