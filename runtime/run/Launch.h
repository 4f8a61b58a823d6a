//===- Launch.h - which ranks this process runs, and how they meet --------===//
//
// The launch topology of fsdp-run: a plan compiled for N ranks runs as N
// in-process ranks (threads of this process over one in-process group,
// runtime/exec/InProcessRanks.h, each with its own device, executor and
// data, BLAS threads shared out between them), or as one process per rank
// under mpirun (or srun --mpi=pmix: the MPI communicator) or torchrun
// (torchrun's environment: the TCP communicator,
// runtime/comm/TcpCommunicator.h); mpirun's environment wins where
// both are set. A one-rank plan runs on the calling thread, without a
// communicator.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_LAUNCH_H
#define FSDP_RUNTIME_RUN_LAUNCH_H

#include "runtime/comm/Communicator.h"
#include "runtime/exec/InProcessRanks.h"
#include "runtime/support/Status.h"
#include "runtime/run/RankRun.h"
#include "runtime/run/RunFlags.h"

#include <memory>

namespace fsdp::run {

/// Whether a launcher (mpirun, srun, torchrun) started this process as one
/// rank of a job.
bool launchedAsRank();

/// This process's rank of a launcher's job: the world (MPI under mpirun,
/// else TCP from torchrun's environment) and its device ordinal (its index
/// among the ranks on its machine).
rt::Status joinLaunchedWorld(std::unique_ptr<rt::Communicator> &world, int &ordinal);

/// The in-process group of `ranks` ranks (one GPU per rank: without any
/// GPU, each rank's device says why), its BLAS threads shared out and a
/// flight recorder per rank in `failures`.
rt::Status createRankGroup(const RunOptions &opts, int ranks,
                           std::unique_ptr<rt::InProcessRanks> &group, FailureReport &failures);

/// Runs the plan `opts` names as fsdp-run does, every rank this process
/// holds, and returns the exit code (failures printed once).
int runPlan(RunOptions &opts);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_LAUNCH_H
