//===- FlightRecorder.h - the last collectives of one rank ----------------===//
//
// When a collective hangs, what each rank was doing is the first thing to
// know: which collectives it issued, which of them started on the device,
// which finished, and which one it is stuck in. The flight recorder keeps
// the last 64 collectives of one rank in a fixed ring (older ones are
// overwritten): the step, the kind, the unit, the bytes, the group, and the
// times it was issued (enqueued by the host), started (its stream reached
// it) and finished, in seconds since the recorder was made (the start of
// the run). The collective watchdog (CollectiveWatchdog.h) fills it in and
// fsdp-run prints it when a collective times out. The entries are updated
// by the rank's thread (issued) and the watchdog's (started, finished), so
// every operation locks.
//
// The printed form is stable (tests and scripts read it):
//
//   rank R: last N collectives (oldest first; seconds since the run started)
//     #SEQ step S: KIND of unit U (BYTES, group G): issued T, started T, finished T
//
// SEQ counts every collective the rank recorded from 1; a time not yet
// reached is "-" (a collective that never started, or never finished).
// Collectives outside a step (the start-up agreement) have step 0 and
// print "start-up" for "step S"; " of unit U" is left out for a collective
// of no unit (unit "-"). BYTES is formatBytes' (runtime/support/ByteSize.h);
// a host call of unknown size (a checkpoint save) prints "(group G)".
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EXEC_FLIGHTRECORDER_H
#define FSDP_RUNTIME_EXEC_FLIGHTRECORDER_H

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace fsdp::rt {

/// One collective as the recorder keeps it. Times are seconds since the
/// recorder's start; negative: not reached (yet).
struct CollectiveRecord {
  uint64_t sequence = 0; // 1, 2, ... in the order recorded (set by add())
  int64_t step = 0;      // the 1-based step; 0 outside a step
  std::string kind;      // "AllGather", "ReduceScatter", "AllReduce", ...
  std::string unit;      // the plan's unit ("3 (blocks.1)"), or "-"
  uint64_t bytes = 0;    // what this rank sends; kUnknownBytes: not known
  static constexpr uint64_t kUnknownBytes = ~uint64_t{0};
  std::string group;     // CollectiveWatchdog.h's group names
  double issued = -1, started = -1, finished = -1;

  /// "step S: KIND of unit U (BYTES, group G)": how the watchdog's message
  /// and the printed recorder name a collective.
  std::string describe() const;
};

class FlightRecorder {
public:
  static constexpr size_t kCapacity = 64;

  /// An empty ring of `capacity` entries whose clock starts now.
  explicit FlightRecorder(size_t capacity = kCapacity);

  /// Seconds since the recorder was made.
  double now() const;
  /// Records `record` (overwriting the oldest entry once full) and returns
  /// its sequence number.
  uint64_t add(CollectiveRecord record);
  /// Sets the started / finished time of collective `sequence`, if it is
  /// still in the ring and has none yet.
  void markStarted(uint64_t sequence, double seconds);
  void markFinished(uint64_t sequence, double seconds);
  /// The entry of `sequence`, if still in the ring.
  bool find(uint64_t sequence, CollectiveRecord &out) const;
  /// The entries, oldest first.
  std::vector<CollectiveRecord> entries() const;
  /// How many collectives were ever recorded.
  uint64_t recorded() const;
  /// The printed form of the file comment, for rank `rank`.
  std::string format(int rank) const;

private:
  CollectiveRecord *slot(uint64_t sequence);

  const std::chrono::steady_clock::time_point start_;
  mutable std::mutex mutex_;
  std::vector<CollectiveRecord> ring_;
  uint64_t next_ = 1; // the sequence number of the next add()
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EXEC_FLIGHTRECORDER_H
