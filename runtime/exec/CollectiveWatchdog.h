//===- CollectiveWatchdog.h - a timeout on every collective of a rank -----===//
//
// A rank whose peer stopped (a stopped or dead process, a wedged GPU)
// waits in its next collective forever: no communicator has a timeout of
// its own, and NCCL's kernels spin. The watchdog is one thread per rank
// that looks, every timeout/20 (5 ms to 0.5 s), at how far the rank's
// collectives have got, and when one has been running longer than the
// timeout (fsdp-run --collective-timeout) it
//   1. reports, through the callback it was given, the line
//        step N: KIND of unit U (BYTES, group G) did not complete in S s on rank R
//      (fsdp-run prints it and this rank's flight recorder),
//   2. aborts the rank's groups (the executor's abort: every communicator
//      and channel, so the collectives of every rank wake with an error;
//      under MPI that is MPI_Abort, which ends the job),
// once; then it stops looking.
//
// It sees two kinds of collectives:
// - a step's, which run on device streams the host cannot look into.
//   Executor::watch gives the plan's collectives (described by
//   describePlanCollective) and a MarkSet with two marks per collective,
//   which the executor has its streams set right before the collective
//   (started) and right after it (finished); the watchdog clears them when
//   a step is issued and reads them when it looks. This works the same on
//   the CPU device (atomic flags) and on a GPU (pinned words written by
//   copies in stream order, also from a replayed CUDA graph). A collective
//   times out once it has started and not finished for the timeout: time
//   its stream spent waiting for compute before it does not count.
// - host calls that block the rank's own thread (fsdp-run's start-up
//   agreement, the group splits of Executor::create): hostCall() brackets
//   one, which times out the same way; fsdp-run also brackets each
//   checkpoint save and load (its collectives and its file I/O as one
//   call, since the two interleave).
// Every collective seen is entered in the rank's FlightRecorder, with the
// times the watchdog saw it issued, started and finished (to within one
// look).
//
// Groups are named "world" (every rank, in order) or "G of N: ranks
// a,b,..." (this rank's group among the N groups of the collective's
// layout, 1-based, and its members), units "U 'NAME'" by the plan's unit
// index and name, or "-" for a collective of no unit (the loss's
// all-reduce), which the message leaves out (FlightRecorder.h). Host
// calls before the first step print "start-up" for "step N".
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_EXEC_COLLECTIVEWATCHDOG_H
#define FSDP_RUNTIME_EXEC_COLLECTIVEWATCHDOG_H

#include "runtime/device/Device.h"
#include "runtime/exec/FlightRecorder.h"
#include "runtime/plan/PlanFile.h"

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace fsdp::rt {

/// How the watchdog names one collective (FlightRecorder's fields).
struct WatchedCollective {
  std::string kind, unit, group;
  uint64_t bytes = 0;
};

/// The collective instruction `instruction` of `plan` as rank `rank` runs
/// it: the kernel's name, the unit it moves (the unit whose shard or
/// gathered buffer it reads or writes, through casts and copies, or whose
/// shard the first reader of its result updates, or the only unit of its
/// sizes; "-" when none), the bytes this rank sends, and its group.
WatchedCollective describePlanCollective(const LoadedPlan &plan, size_t instruction, int rank);

/// The group name of the file comment for a collective layout: `ranks`
/// (every rank once, group by group) in groups of `groupSize`.
std::string describeGroup(const int64_t *ranks, size_t numRanks, int64_t groupSize, int rank);

class CollectiveWatchdog {
public:
  /// What a timeout reports (before the abort); called once, on the
  /// watchdog's thread.
  using Report = std::function<void(const std::string &message)>;
  /// What a timeout aborts, with the message as the reason.
  using Abort = std::function<void(const std::string &reason)>;

  /// Starts the thread. `recorder` must outlive the watchdog.
  CollectiveWatchdog(double timeoutSeconds, int rank, FlightRecorder &recorder, Report report,
                     Abort abort);
  /// Stops the thread.
  ~CollectiveWatchdog();
  CollectiveWatchdog(const CollectiveWatchdog &) = delete;
  CollectiveWatchdog &operator=(const CollectiveWatchdog &) = delete;

  double timeoutSeconds() const { return timeout_; }
  int rank() const { return rank_; }
  FlightRecorder &recorder() { return recorder_; }
  /// Whether a collective timed out, and the message it reported.
  bool fired() const;
  std::string message() const;

  /// What a timeout aborts from now on (null: the one given at
  /// construction). Waits for a timeout being handled to finish, so an
  /// executor can withdraw its abort before it goes away.
  void setAbort(Abort abort);

  // --- A step's collectives (Executor::watch; the executor's thread).

  /// The plan's collectives, in an order of its choosing, and the marks
  /// the executor sets around them: 2k before collective k, 2k + 1 after.
  /// Null `marks` stops watching steps.
  void watchSteps(std::vector<WatchedCollective> collectives, MarkSet *marks);
  /// A step is about to be enqueued: clears the marks and records
  /// collectives `order` (indices into watchSteps' list) as issued now.
  /// `step` is 1-based.
  void stepIssued(int64_t step, const std::vector<uint32_t> &order);
  /// The step's streams are idle: takes a last look at the marks.
  void stepEnded();

  // --- Host calls (the rank's thread).

  /// Brackets one blocking host call from construction to destruction.
  class HostCall {
  public:
    HostCall(HostCall &&other) noexcept : dog_(other.dog_), sequence_(other.sequence_) {
      other.dog_ = nullptr;
    }
    HostCall(const HostCall &) = delete;
    HostCall &operator=(const HostCall &) = delete;
    ~HostCall();

  private:
    friend class CollectiveWatchdog;
    HostCall(CollectiveWatchdog *dog, uint64_t sequence) : dog_(dog), sequence_(sequence) {}
    CollectiveWatchdog *dog_;
    uint64_t sequence_;
  };
  /// A host call named like a step's collective (unit "-"): at `step`
  /// (0: start-up), of `bytes` (CollectiveRecord::kUnknownBytes: unknown).
  HostCall hostCall(const std::string &kind, const std::string &group, uint64_t bytes,
                    int64_t step = 0);

  /// One look; true once a timeout fired. The thread calls it; tests may.
  bool poll();

private:
  struct InFlight {
    uint64_t sequence = 0; // in the recorder
    double started = -1;   // when the watchdog saw it start
    bool finished = false;
  };

  void run();
  /// Reads the marks of the current step (under mutex_).
  void readMarks(double now);
  /// Reports and aborts, once (outside mutex_).
  void fire();

  const double timeout_;
  const int rank_;
  FlightRecorder &recorder_;
  const Report report_;
  const Abort defaultAbort_;

  mutable std::mutex mutex_; // everything below but the thread
  std::vector<WatchedCollective> collectives_;
  MarkSet *marks_ = nullptr;
  int64_t step_ = 0;
  std::vector<uint32_t> order_;     // the current step's collectives
  std::vector<InFlight> inFlight_;  // parallel to order_
  InFlight host_;                   // sequence 0: no host call
  bool fired_ = false;
  std::string message_;

  std::mutex abortMutex_; // held while a timeout is handled
  Abort abort_;

  std::mutex stopMutex_;
  std::condition_variable stopCv_;
  bool stop_ = false;
  std::thread thread_;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_EXEC_COLLECTIVEWATCHDOG_H
