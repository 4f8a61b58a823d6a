//===- Launch.cpp - which ranks this process runs, and how they meet ------===//
//
// Only rank 0 prints and writes files. In-process ranks report the rank
// that failed first once, after every rank has stopped; ranks of a
// multi-process job print their own failure (an MPI abort ends the
// process). Preemption signals are taken before any thread exists
// (StopSignals.h): under a launcher, SIGTERM also prints the rank's flight
// recorder (Watchdog.h).
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Launch.h"

#include "runtime/comm/MpiCommunicator.h"
#include "runtime/comm/TcpCommunicator.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/plan/PlanDump.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/run/Driver.h"
#include "runtime/run/StopSignals.h"
#include "runtime/run/Watchdog.h"

#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <thread>

// OpenBLAS's thread count (cblas.h of OpenBLAS; the CPU backend links it).
extern "C" void openblas_set_num_threads(int numThreads);

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

/// OpenBLAS threads for `ranks` ranks on this machine: the cores shared
/// out, unless the user chose. In-process ranks share one pool; mpirun's
/// ranks on a node share its cores the same way, so a rank computes with
/// the same thread count (and OpenBLAS's blocking, the same bits) either way.
void shareBlasThreads(int ranks) {
  if (std::getenv("OPENBLAS_NUM_THREADS") || std::getenv("OMP_NUM_THREADS"))
    return;
  int cores = static_cast<int>(std::thread::hardware_concurrency());
  openblas_set_num_threads(std::max(1, cores / ranks));
}

/// MPI's world and this rank's device ordinal (its index on its node).
Status createMpiRank(std::unique_ptr<Communicator> &world, int &ordinal) {
  // Open MPI names the ranks started on this node.
  if (const char *local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE"); local && std::atoi(local) > 0)
    shareBlasThreads(std::atoi(local));
  FSDP_RUN_RETURN_IF_FAILED(comm::createMpiWorld(world));
  const char *localRank = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  ordinal = localRank ? std::max(0, std::atoi(localRank)) : 0;
  return Status::ok();
}

/// torchrun's world (over TCP) and this rank's device ordinal.
Status createTcpRank(std::unique_ptr<Communicator> &world, int &ordinal) {
  comm::TcpWorldOptions tcp;
  if (Status s = comm::tcpWorldOptionsFromEnv(tcp); !s)
    return Status::error("torchrun's environment: " + s.message());
  if (tcp.localSize > 0)
    shareBlasThreads(tcp.localSize);
  if (Status s = comm::createTcpWorld(tcp, world); !s)
    return Status::error(cat("rank ", tcp.rank, ": ", s.message()));
  ordinal = tcp.localRank;
  return Status::ok();
}

} // namespace

bool launchedAsRank() { return comm::launchedUnderMpi() || comm::launchedUnderTorchrun(); }

Status joinLaunchedWorld(std::unique_ptr<Communicator> &world, int &ordinal) {
  return comm::launchedUnderMpi() ? createMpiRank(world, ordinal) : createTcpRank(world, ordinal);
}

Status createRankGroup(const RunOptions &opts, int ranks, std::unique_ptr<InProcessRanks> &group,
                       FailureReport &failures) {
  if (opts.device == "cuda")
    if (int gpus = cudaDeviceCount(); gpus > 0 && ranks > gpus)
      return Status::error(cat(opts.planPath, " runs ", ranks,
                               " ranks in this process, one GPU each (GPUs 0..", ranks - 1,
                               "), but this machine has ", gpus, " GPU", gpus == 1 ? "" : "s",
                               "; run them as processes on several machines (mpirun), or "
                               "compile for ",
                               gpus, " ranks (fsdp-opt --world-size=", gpus, ")"));
  FSDP_RUN_RETURN_IF_FAILED(InProcessRanks::create(ranks, group));
  FSDP_RUN_RETURN_IF_FAILED(applyStallTestHook(group->communicators()));
  shareBlasThreads(ranks);
  for (int r = 0; r < ranks; ++r)
    failures.recorders.push_back(std::make_unique<FlightRecorder>());
  return Status::ok();
}

namespace {

/// N ranks as threads of this process, one in-process group.
int runInProcess(const RunOptions &opts, const LoadedPlan &plan, int ranks) {
  std::unique_ptr<InProcessRanks> group;
  FailureReport failures;
  if (Status s = createRankGroup(opts, ranks, group, failures); !s)
    return fail(s.message());
  (void)group->onEveryRank(
      [&](int r) { return runRank(opts, plan, &group->comm(r), r, &failures); });
  if (failures.rank < 0)
    return 0;
  fail(failures.message);
  failures.printRecordersAfterTimeout(ranks);
  return 1;
}

/// This process as `world`'s rank of a multi-process job, on the
/// `ordinal`-th device of its machine; every rank prints its own failure.
int runWorldRank(const RunOptions &opts, const LoadedPlan &plan, Communicator &world,
                 int ordinal) {
  FailureReport failures;
  failures.print = true;
  failures.recorders.push_back(std::make_unique<FlightRecorder>());
  reportTerminationOf(world.rank(), failures.recorders[0].get());
  // Unregistered before `failures` is destroyed: a SIGTERM may come while
  // MPI finalizes (mpirun ending the job after another rank failed).
  struct Unregister {
    int rank;
    ~Unregister() { reportTerminationOf(rank, nullptr); }
  } unregister{world.rank()};
  if (Status s = runRank(opts, plan, &world, ordinal, &failures); !s) {
    if (world.size() == 1)
      return fail(s.message());
    return 1; // reported by runRank
  }
  return 0;
}

/// This process as one rank of a launcher's job: mpirun's (MPI) or
/// torchrun's (TCP, or any launcher that sets torchrun's environment).
int runLaunchedRank(const RunOptions &opts, const LoadedPlan &plan) {
  // Before MPI's threads exist: mpirun's SIGTERM prints this rank's
  // recorder (Watchdog.h); any other stops training after the step.
  takeSignals({opts.stopOnSignals, /*launched=*/true});
  std::unique_ptr<Communicator> world;
  int ordinal = 0;
  if (Status s = joinLaunchedWorld(world, ordinal); !s)
    return fail(s.message());
  return runWorldRank(opts, plan, *world, ordinal);
}

} // namespace

int runPlan(RunOptions &opts) {
  LoadedPlan plan;
  if (Status s = loadRunPlan(opts, plan); !s)
    return fail(s.message());
  if (opts.dump) {
    std::cout << dumpPlan(plan);
    return 0;
  }
  uint32_t planWorld = plan.plan().world_size();
  if (Status s = checkOptionsAgainstPlan(opts, plan); !s)
    return fail(s.message());
  // Preemption (StopSignals.h): fsdp-run's training runs stop after the
  // step on SIGTERM or SIGINT; a program embedding a step keeps its own
  // signals.
  opts.stopOnSignals = plan.isTraining();
  const bool launched = launchedAsRank();
  if (opts.stopOnSignals && !launched)
    takeSignals({/*stops=*/true, /*launched=*/false});
  if (launched)
    return runLaunchedRank(opts, plan);
  if (planWorld == 1) {
    if (Status s = runRank(opts, plan, nullptr, 0, nullptr); !s)
      return fail(s.message());
    return 0;
  }
  return runInProcess(opts, plan, static_cast<int>(planWorld));
}

} // namespace fsdp::run
