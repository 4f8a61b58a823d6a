//===- StopSignals.h - SIGTERM and SIGINT: stop after the step -----------===//
//
// Preemption (Slurm's --signal=TERM@60, a scheduler's SIGTERM, Ctrl-C): a
// training run that gets SIGTERM or SIGINT finishes the step it is in, and
// every rank stops after that same step (TrainingRun agrees on it once a
// step, an allGather of one integer, so ranks that see the signal at
// different times still stop together); with --save it writes a checkpoint
// of that step, then exits 0 with "stopped by SIGTERM after step N; ...". A
// second signal exits at once with 130: a checkpoint being written is left
// uncommitted (.tmp-step-N, never loaded), and --resume takes the newest
// committed one.
//
// One thread takes the signals, as ordinary code: the handler only writes
// the signal and its sender's pid to a pipe (async-signal-safe), the
// thread reads and decides. The signals are blocked in the thread that
// installs this, so every thread started after it (ranks, MPI's, the
// watchdogs) inherits the block and is never interrupted by them; threads
// that existed before (a BLAS pool) may run the handler, which is harmless.
//
// MPI ranks keep the collective watchdog's report (Watchdog.h): a SIGTERM
// sent by Open MPI's launcher (mpirun, orted, prterun, prted: mpirun ends
// the job that way when a rank fails, and a second later kills it) prints
// the rank's last collectives and exits 1 as before. Any other sender's
// SIGTERM (slurmstepd under srun, a user, torchrun's agent passing its own
// on) is a stop. Signalling mpirun itself ends the job (Open MPI turns it
// into the launcher's SIGTERM): signal the ranks. torchrun's agent also
// sends SIGTERM when another rank has failed; that stop then fails in the
// next collective with the rank that died (exit 1), or the agent kills
// the rank after its grace period.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_STOPSIGNALS_H
#define FSDP_RUNTIME_RUN_STOPSIGNALS_H

namespace fsdp::run {

struct SignalUse {
  /// A training run: SIGTERM and SIGINT request a stop after the step.
  bool stops = false;
  /// One rank of a launcher's job (mpirun, torchrun): the launcher's
  /// SIGTERM prints the watchdog's report and exits 1 (of a forward plan,
  /// any SIGTERM).
  bool launched = false;
};

/// Takes SIGTERM (and SIGINT when `use.stops`) for the rest of the process.
/// Once, before any thread of the run starts (MPI's included).
void takeSignals(SignalUse use);

/// The first stop signal taken (SIGTERM or SIGINT), or 0.
int stopSignal();

/// "SIGTERM", "SIGINT".
const char *signalName(int signal);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_STOPSIGNALS_H
