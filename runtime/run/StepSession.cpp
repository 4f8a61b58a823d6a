//===- StepSession.cpp - a compiled step driven a few steps at a time -----===//
//
// The pieces of fsdp-run's run (RunFlags, Launch, RankRun, Train) kept
// apart in time: create() parses, loads, checks, starts the ranks and
// begins training; run(), save() and finish() are each one job on every
// rank. In-process ranks run their jobs on the threads of one
// InProcessRanks group, so a rank's device is always used from its
// thread; a one-rank plan, and this process's rank of a launched job, run
// on the caller's thread.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/StepSession.h"

#include "runtime/exec/InProcessRanks.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/run/Driver.h"
#include "runtime/run/Launch.h"
#include "runtime/run/RankRun.h"
#include "runtime/run/Train.h"

#include <functional>
#include <memory>
#include <vector>

namespace fsdp::run {

using namespace fsdp::rt;

// Declared in destruction order: each rank's training run before its
// executor (on the ranks' threads, ~StepSession), then the recorders, and
// the communicators and the group's threads last.
struct StepSession::State {
  RunOptions opts;
  LoadedPlan plan;
  std::unique_ptr<InProcessRanks> group; // in-process ranks of a multi-rank plan
  std::unique_ptr<Communicator> world;   // this process's rank of a launched job
  std::vector<int> ordinals;
  FailureReport failures;
  std::vector<RankRun> ranks;
  std::vector<std::unique_ptr<TrainingRun>> training;
  std::string failed; // why the session stopped, once it has

  /// Rank r's communicator; null for one rank alone.
  Communicator *comm(int r) { return group ? &group->comm(r) : world.get(); }

  /// Runs `job` as every rank of this process; a failure aborts the group
  /// (rankFailed) and ends the session.
  Status onEveryRank(const std::function<Status(int)> &job) {
    if (!failed.empty())
      return Status::error("the run failed earlier (" + failed + "); finalize it");
    if (!group) {
      Status s = rankFailed(job(0), comm(0), &failures, ranks[0]);
      if (!s)
        failed = s.message();
      return s;
    }
    // FailureReport keeps the first failure, a timeout's included.
    (void)group->onEveryRank(
        [&](int r) { return rankFailed(job(r), comm(r), &failures, ranks[r]); });
    if (failures.rank < 0)
      return Status::ok();
    failed = failures.message;
    failures.printRecordersAfterTimeout(static_cast<int>(ranks.size()));
    return Status::error(failures.message);
  }
};

StepSession::StepSession(std::unique_ptr<State> state) : state_(std::move(state)) {}

StepSession::~StepSession() {
  // Each rank's executor goes on the thread that used its device.
  if (state_->group)
    (void)state_->group->onEveryRank([&](int r) {
      state_->training[r].reset();
      state_->ranks[r].release();
      return Status::ok();
    });
}

Status StepSession::create(const FsdpEmbeddedStep &step, int argc, char **argv,
                           std::unique_ptr<StepSession> &out) {
  auto st = std::make_unique<State>();
  RunOptions &opts = st->opts;
  prepareOptions(argc, argv, &step, opts);
  opts.steps = 0; // must be given: the step the run ends at
  std::string parseError;
  bool exitNow = false;
  int code;
  {
    FailureCapture capture(parseError);
    code = parseRunArgs(argc, argv, opts, exitNow);
  }
  if (code != 0)
    return Status::error(parseError);
  if (exitNow)
    return Status::error("--help: the command line is fsdp_step_main's (fsdp_step_init takes "
                         "options to run)");
  if (opts.dump)
    return Status::error("--dump: run it through fsdp_step_main");
  if (opts.steps == 0)
    return Status::error("fsdp_step_init needs --steps=K: the step the run ends at (where "
                         "--save writes its last checkpoint, and the learning-rate schedule's "
                         "end unless --max-steps says otherwise)");
  FSDP_RUN_RETURN_IF_FAILED(loadRunPlan(opts, st->plan));
  FSDP_RUN_RETURN_IF_FAILED(checkOptionsAgainstPlan(opts, st->plan));
  if (!st->plan.isTraining())
    return Status::error(opts.planPath + " is a forward plan: fsdp_step_init trains (run a "
                         "forward plan with fsdp_step_main)");
  const int planWorld = static_cast<int>(st->plan.plan().world_size());
  int ranks = 1;
  if (launchedAsRank()) {
    st->ordinals.push_back(0);
    FSDP_RUN_RETURN_IF_FAILED(joinLaunchedWorld(st->world, st->ordinals[0]));
    st->failures.print = true;
    st->failures.recorders.push_back(std::make_unique<FlightRecorder>());
  } else if (planWorld > 1) {
    ranks = planWorld;
    FSDP_RUN_RETURN_IF_FAILED(createRankGroup(opts, ranks, st->group, st->failures));
    for (int r = 0; r < ranks; ++r)
      st->ordinals.push_back(r);
  } else {
    st->ordinals.push_back(0);
  }
  st->ranks.resize(ranks);
  st->training.resize(ranks);
  State &state = *st;
  out.reset(new StepSession(std::move(st)));
  Status s = state.onEveryRank([&](int r) -> Status {
    RankRun &rank = state.ranks[r];
    FSDP_RUN_RETURN_IF_FAILED(startRank(state.opts, state.plan, state.comm(r), state.ordinals[r],
                                        &state.failures, rank));
    state.training[r] =
        std::make_unique<TrainingRun>(state.opts, *rank.executor, rank.watchdog.get());
    return state.training[r]->begin();
  });
  if (!s)
    out.reset();
  return s;
}

Status StepSession::run(int64_t steps, double &lastLoss) {
  if (steps < 1)
    return Status::error(cat("steps: invalid value ", steps, "; must be >= 1"));
  const int64_t last = step() + steps;
  // Refused before any rank starts, so the session goes on.
  if (last > state_->opts.steps)
    return Status::error(cat("step ", last, " is past --steps=", state_->opts.steps,
                             " (the step the run ends at)"));
  FSDP_RUN_RETURN_IF_FAILED(
      state_->onEveryRank([&](int r) { return state_->training[r]->runSteps(last); }));
  lastLoss = state_->training[0]->lastLoss();
  return Status::ok();
}

Status StepSession::save(const std::string &dir) {
  if (dir.empty())
    return Status::error("save: no directory given");
  return state_->onEveryRank([&](int r) { return state_->training[r]->save(dir); });
}

Status StepSession::finish() {
  return state_->onEveryRank([&](int r) { return state_->training[r]->finish(); });
}

int64_t StepSession::step() const { return state_->training[0]->nextStep() - 1; }

} // namespace fsdp::run
