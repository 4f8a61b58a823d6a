//===- RankRun.cpp - one rank of fsdp-run: checks, set-up, failure --------===//
//
// A multi-rank rank is watched from its first collective on: the plan
// agreement and the executor's group set-up (hybrid plans split the world
// there) are host calls of its watchdog, so a start-up that hangs stops on
// --collective-timeout like a step does.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/RankRun.h"

#include "runtime/checkpoint/ModelState.h"
#include "runtime/device/DeviceRegistry.h"
#include "runtime/embed/EmbeddedStepLoader.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/support/ByteSize.h"
#include "runtime/train/TrainLog.h"
#include "runtime/run/Driver.h"
#include "runtime/run/Forward.h"
#include "runtime/run/Train.h"
#include "runtime/run/Watchdog.h"

#include <iostream>
#include <optional>

namespace fsdp::run {

using namespace fsdp::rt;

Status loadRunPlan(const RunOptions &opts, LoadedPlan &plan) {
  Status loaded = opts.embedded ? loadEmbeddedPlan(*opts.embedded, opts.planPath, plan)
                                : loadPlan(opts.planPath, plan);
  if (loaded && opts.embedded)
    loaded = registerEmbeddedKernels(*opts.embedded);
  return loaded;
}

Status checkOptionsAgainstPlan(const RunOptions &opts, const LoadedPlan &plan) {
  uint32_t planWorld = plan.plan().world_size();
  if (opts.worldSize && *opts.worldSize != planWorld)
    return Status::error(cat("--world-size=", *opts.worldSize, ": ", opts.planPath,
                             " was compiled for world size ", planWorld,
                             " (recompile with fsdp-opt --world-size=", *opts.worldSize, ")"));
  if (!plan.isTraining()) {
    if (std::string flag = trainingFlagGiven(opts); !flag.empty())
      return Status::error(flag + ": only training plans take it, and " + opts.planPath +
                           " is a forward plan (compile without --mode=forward)");
    return Status::ok();
  }
  return opts.lrSchedule.check(opts.lrScheduleText.value_or("constant"),
                               opts.lr.value_or(plan.plan().base_lr()), opts.scheduleSteps());
}

void FailureReport::report(int failedRank, const std::string &what) {
  if (print) {
    fail(cat("rank ", failedRank, ": ", what));
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  if (rank < 0) {
    rank = failedRank;
    message = cat("rank ", failedRank, ": ", what);
  }
}

void FailureReport::timeout(int r, const std::string &what) {
  if (print) {
    std::cerr << (programName() + ": error: " + what + "\n" + recorderOf(r).format(r));
    std::cerr.flush();
    recorderPrinted();
    return;
  }
  std::lock_guard<std::mutex> lock(mutex);
  timedOut = true;
  if (rank < 0) {
    rank = r;
    message = what; // names its rank already
  }
}

void FailureReport::printRecordersAfterTimeout(int ranks) {
  if (timedOut)
    for (int r = 0; r < ranks; ++r)
      std::cerr << recorderOf(r).format(r);
}

namespace {

/// The start-up agreement of a multi-rank run: every rank holds the same
/// plan, compiled for as many ranks as there are.
Status checkRanksAgree(const RunOptions &opts, const LoadedPlan &plan, Communicator &comm) {
  if (Status s = comm.checkSameOnAllRanks(plan.hash(), "the plan (content hash)"); !s)
    return Status::error(s.message() + "; every rank must run the same plan file");
  // The hash covers the whole plan, world size included: ranks that agree
  // on it agree on the world size, which must then be the number started.
  uint32_t planWorld = plan.plan().world_size();
  if (comm.size() != static_cast<int>(planWorld))
    return Status::error(cat(opts.planPath, ": compiled for world size ", planWorld, ", but ",
                             comm.size(), " ranks were started (mpirun -np ", planWorld,
                             " or torchrun --nproc-per-node=", planWorld,
                             ", or recompile with fsdp-opt --world-size=", comm.size(), ")"));
  return Status::ok();
}

/// Refuses a plan that cannot fit before any of it is allocated: its device
/// bytes against what the device has free (devices whose memory is the
/// host's report none and are not checked).
Status checkDeviceMemory(const RunOptions &opts, const LoadedPlan &plan, Device &device,
                         int ordinal) {
  DeviceMemoryInfo memory;
  if (!device.memoryInfo(memory))
    return Status::ok();
  const plan::Plan &p = plan.plan();
  const uint64_t constants = p.constant_data() ? p.constant_data()->size() : 0;
  const uint64_t needed = p.persistent_bytes() + p.arena_bytes() + constants;
  if (needed <= memory.freeBytes)
    return Status::ok();
  return Status::error(cat(opts.device, " device ", ordinal, ": ", opts.planPath, " needs ",
                           formatBytes(needed), " (", needed, " bytes: persistent ",
                           p.persistent_bytes(), " + arena ", p.arena_bytes(), " + constants ",
                           constants, ") of device memory, but only ",
                           formatBytes(memory.freeBytes), " (", memory.freeBytes, " bytes) of its ",
                           formatBytes(memory.totalBytes), " are available"));
}

} // namespace

Status startRank(const RunOptions &opts, const LoadedPlan &plan, Communicator *comm,
                 int ordinal, FailureReport *failures, RankRun &run) {
  bool multiRank = comm && comm->size() > 1;
  std::unique_ptr<CollectiveWatchdog> &watchdog = run.watchdog;
  if (multiRank) {
    const int rank = comm->rank();
    watchdog = std::make_unique<CollectiveWatchdog>(
        opts.collectiveTimeout, rank, failures->recorderOf(rank),
        [failures, rank](const std::string &message) { failures->timeout(rank, message); },
        [comm](const std::string &message) { comm->abort(message); });
    auto call = watchdog->hostCall("plan agreement (allGather of the plan hash)", "world", 8);
    if (Status s = checkRanksAgree(opts, plan, *comm); !s) {
      failures->report(comm->rank(), s.message());
      run.agreementFailed = true;
      return s;
    }
  }
  std::unique_ptr<Device> &device = run.device;
  DeviceOptions deviceOptions;
  deviceOptions.ordinal = ordinal;
  deviceOptions.tf32 = opts.tf32;
  std::unique_ptr<Executor> &executor = run.executor;
  Status s = createDevice(opts.device, deviceOptions, device);
  if (s)
    s = checkDeviceMemory(opts, plan, *device, ordinal);
  if (s) {
    // Hybrid plans split the world here: collective, so watched.
    std::optional<CollectiveWatchdog::HostCall> call;
    if (watchdog)
      call.emplace(watchdog->hostCall("group set-up (Executor::create)", "world",
                                      CollectiveRecord::kUnknownBytes));
    s = Executor::create(plan, *device, comm, executor);
  }
  if (s && watchdog)
    s = executor->watch(*watchdog);
  if (s && opts.device == "cuda") {
    bool graphs = opts.cudaGraphs.value_or(true);
    // --offload=cpu's optimizer runs on a host thread, outside any graph.
    if (graphs && executor->hasHostStream()) {
      if (executor->rank() == 0)
        std::cerr << programName() << ": note: " << opts.planPath
                  << " runs its optimizer on the host stream (--offload=cpu), which a CUDA "
                     "graph cannot capture: steps run eagerly\n";
      graphs = false;
    }
    s = executor->useGraphs(graphs);
  }
  // A resumed run takes every parameter from its checkpoint; a compiled
  // step's own weights are embedded or beside the binary.
  if (s && opts.resumePath.empty())
    s = opts.embedded && opts.weightsPath.empty()
            ? loadEmbeddedWeights(*opts.embedded, *executor)
            : ModelState(*executor).loadWeights(opts.weightsPath);
  return s;
}

Status rankFailed(const Status &s, Communicator *comm, FailureReport *failures, RankRun &run) {
  if (s || !comm || comm->size() <= 1 || run.agreementFailed)
    return s;
  failures->report(comm->rank(), s.message());
  if (run.executor)
    run.executor->abort(s.message());
  else
    comm->abort(s.message());
  return s;
}

Status runRank(const RunOptions &opts, const LoadedPlan &plan, Communicator *comm,
               int ordinal, FailureReport *failures) {
  RankRun run;
  Status s = startRank(opts, plan, comm, ordinal, failures, run);
  if (s)
    s = plan.isTraining() ? runTraining(opts, *run.executor, run.watchdog.get())
                          : runForward(opts, *run.executor);
  return rankFailed(s, comm, failures, run);
}

} // namespace fsdp::run
