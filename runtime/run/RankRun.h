//===- RankRun.h - one rank of fsdp-run: checks, set-up, failure ----------===//
//
// What every rank does whichever way it was started (Launch.h): the plan is
// loaded and the options checked against it before any rank starts; then
// each rank agrees with the others on the plan (content hash and world
// size, so ranks started on different plans stop with the same error),
// gets its device (refused before any allocation when the plan does not
// fit), its executor and the weights, runs the plan (Forward.h, Train.h)
// and, when it fails with others waiting, reports and aborts the group so
// they stop too. How a failure is reported depends on the launch
// (FailureReport): in-process ranks keep the first for the driver to print
// once, ranks of a multi-process job print their own.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_RANKRUN_H
#define FSDP_RUNTIME_RUN_RANKRUN_H

#include "runtime/comm/Communicator.h"
#include "runtime/device/Device.h"
#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"
#include "runtime/exec/FlightRecorder.h"
#include "runtime/plan/PlanFile.h"
#include "runtime/support/Status.h"
#include "runtime/run/RunFlags.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace fsdp::run {

/// The plan the options name (a file, or the compiled step's), with a
/// step's generated kernels handed to the backends.
rt::Status loadRunPlan(const RunOptions &opts, rt::LoadedPlan &plan);

/// The checks of the options against the plan, before any rank starts:
/// --world-size, training-only flags on a forward plan, the schedule.
rt::Status checkOptionsAgainstPlan(const RunOptions &opts, const rt::LoadedPlan &plan);

/// How a failing rank of a multi-rank run reports, before it aborts the
/// group (an MPI abort ends the process): in-process ranks record the
/// first failure for the driver to print once; MPI ranks print their own.
struct FailureReport {
  std::mutex mutex;
  bool print = false; // MPI: print at once
  int rank = -1;      // in-process: the first rank that failed
  std::string message;
  // The collective watchdog: each rank's flight recorder (in-process: one
  // per rank; MPI: this rank's), and whether a collective timed out.
  std::vector<std::unique_ptr<rt::FlightRecorder>> recorders;
  bool timedOut = false;

  void report(int failedRank, const std::string &what);
  rt::FlightRecorder &recorderOf(int r) { return *recorders[print ? 0 : r]; }
  /// A timeout on rank `r` (its watchdog's thread, before the abort): MPI
  /// prints the message and the recorder now, since the abort ends the
  /// process; in-process the driver prints them once every rank is back.
  void timeout(int r, const std::string &what);
  /// In-process ranks, once all are back: after a timeout, every rank's
  /// last collectives on stderr, one block per rank.
  void printRecordersAfterTimeout(int ranks);
};

/// One rank's set-up, which startRank makes: the watchdog outlives the
/// executor, which withdraws from it when done (members are destroyed in
/// reverse order); until the executor watches, a timeout aborts the world.
struct RankRun {
  std::unique_ptr<rt::CollectiveWatchdog> watchdog;
  std::unique_ptr<rt::Device> device;
  std::unique_ptr<rt::Executor> executor;
  /// A failed start-up agreement, which every rank reports alike and which
  /// leaves nobody waiting: no abort.
  bool agreementFailed = false;

  /// Destroys the executor, then its device, then the watchdog.
  void release() {
    executor.reset();
    device.reset();
    watchdog.reset();
  }
};

/// Sets up one rank on its own device (--device, the `ordinal`-th of its
/// kind) and executor, with the plan's weights (or nothing, to resume).
/// `comm` is null for a world-size-1 plan.
rt::Status startRank(const RunOptions &opts, const rt::LoadedPlan &plan, rt::Communicator *comm,
                     int ordinal, FailureReport *failures, RankRun &run);

/// With several ranks, a rank's failure is reported and then aborts the
/// group (except a failed start-up agreement); returns `s`.
rt::Status rankFailed(const rt::Status &s, rt::Communicator *comm, FailureReport *failures,
                      RankRun &run);

/// One rank's whole run (startRank, then the plan's run).
rt::Status runRank(const RunOptions &opts, const rt::LoadedPlan &plan, rt::Communicator *comm,
                   int ordinal, FailureReport *failures);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_RANKRUN_H
