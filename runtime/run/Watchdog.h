//===- Watchdog.h - fsdp-run's side of the collective watchdog ------------===//
//
// --collective-timeout=SECONDS (default 600) puts a CollectiveWatchdog
// (runtime/exec/CollectiveWatchdog.h) on every rank of a multi-rank run. A
// timeout prints "fsdp-run: error: step N: KIND of unit U (BYTES, group G)
// did not complete in S s on rank R" and the flight recorders, aborts the
// group, and fsdp-run exits with 1:
// - in-process ranks: the group is aborted, every rank returns, and the
//   driver prints the message once and then each rank's recorder;
// - MPI ranks: the rank that timed out prints the message and its recorder
//   (flushed) before its abort, which is MPI_Abort. mpirun then ends every
//   other rank with SIGTERM (and SIGKILL a second later); fsdp-run turns
//   that SIGTERM into a line saying so and the rank's own recorder, then
//   exits with 1, so every rank that is alive and not stopped prints its
//   last collectives (a SIGTERM from anyone else stops a training run
//   after its step instead: StopSignals.h). The same happens when a rank dies (mpirun ends the
//   job) or the job is cancelled.
// This file holds what fsdp-run.cpp needs for that: the SIGTERM report of
// MPI ranks and the in-process test hook FSDP_TEST_STALL_COLLECTIVE.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_WATCHDOG_H
#define FSDP_RUNTIME_RUN_WATCHDOG_H

#include "runtime/comm/Communicator.h"
#include "runtime/exec/FlightRecorder.h"

#include <memory>
#include <vector>

namespace fsdp::run {

/// MPI ranks, on the launcher's SIGTERM (StopSignals.h takes it): prints
/// "fsdp-run: error: rank R: ended by SIGTERM ..." and the recorder
/// registered by reportTerminationOf, and exits with 1.
[[noreturn]] void reportTerminationAndExit();
/// The rank and recorder a SIGTERM reports; a null recorder unregisters
/// it, which waits for a report in progress (that report ends the process),
/// so the recorder may be destroyed once this returns.
void reportTerminationOf(int rank, rt::FlightRecorder *recorder);
/// The recorder was printed already (a timeout on this rank): a SIGTERM
/// only exits.
void recorderPrinted();

/// In-process ranks: FSDP_TEST_STALL_COLLECTIVE=R:N (a test hook: rank R
/// blocks in its N-th collective call until the group is aborted;
/// runtime/comm/StallingCommunicator.h). Nothing when it is not set.
rt::Status applyStallTestHook(std::vector<std::unique_ptr<rt::Communicator>> &ranks);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_WATCHDOG_H
