//===- Train.cpp - fsdp-run on a training plan ----------------------------===//
//
// Each rank feeds its own samples (the data contract's RankLayout) and
// runs the same compiled step; the loss a sharded plan outputs is already
// the global mean (the compiler all-reduces it), so rank 0's is the run's.
// Only rank 0 prints, writes --metrics and writes outputs; --save-weights
// is collective (every rank contributes its shards, rank 0 writes), and so
// are --save's checkpoints (every rank writes its own state) and --resume. A
// step's time covers staging its inputs, the compiled step and reading the
// loss back: what a user waits for.
//
//===----------------------------------------------------------------------===//

#include "tools/fsdp-run/Train.h"

#include "runtime/channels/MpiCommunicator.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/train/DataSource.h"
#include "runtime/train/TrainLog.h"
#include "tools/fsdp-run/ProfileReport.h"
#include "tools/fsdp-run/Progress.h"

#include <unistd.h>

#include <chrono>
#include <optional>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

/// The data source the options describe, for the executor's rank.
Status openData(const RunOptions &opts, Executor &executor, std::unique_ptr<DataSource> &source) {
  std::vector<InputSpec> specs;
  for (const std::string &name : executor.inputNames()) {
    InputSpec spec;
    spec.name = name;
    if (Status s = executor.inputType(name, spec.dtype, spec.shape); !s)
      return s;
    specs.push_back(std::move(spec));
  }
  RankLayout layout{executor.rank(), executor.worldSize()};
  if (!opts.dataPath.empty()) {
    if (!opts.inputs.empty())
      return Status::error("--input=" + opts.inputs.begin()->first +
                           ": the plan's inputs come from --data=" + opts.dataPath +
                           " (give --data or --input, not both)");
    return openTokenFile(specs, opts.dataPath, layout, source);
  }
  for (const InputSpec &spec : specs)
    if (!opts.inputs.count(spec.name))
      return Status::error("missing --input=" + spec.name +
                           "=FILE.npy (a training plan takes each input as a .npy of samples "
                           "stacked on dimension 0, or --data=FILE for token models)");
  return openSampleFiles(specs, opts.inputs, layout, source);
}

} // namespace

namespace {
double since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Checkpoints gather and agree over the world between file writes: one
// watched host call each (CollectiveWatchdog.h).
std::optional<CollectiveWatchdog::HostCall> watch(CollectiveWatchdog *watchdog, const char *what,
                                                  int64_t step) {
  std::optional<CollectiveWatchdog::HostCall> call;
  if (watchdog)
    call.emplace(watchdog->hostCall(what, "world", CollectiveRecord::kUnknownBytes, step));
  return call;
}
} // namespace

TrainingRun::TrainingRun(const RunOptions &opts, Executor &executor, CollectiveWatchdog *watchdog)
    : opts_(opts), executor_(executor), watchdog_(watchdog) {}

TrainingRun::~TrainingRun() = default;

Status TrainingRun::begin() {
  if (Status s = openData(opts_, executor_, data_); !s)
    return s;
  const bool lead = executor_.rank() == 0; // reports and writes files
  metrics_ = std::make_unique<MetricsFile>();
  if (lead && !opts_.metricsPath.empty())
    if (Status s = metrics_->open(opts_.metricsPath); !s)
      return s;
  baseLr_ = opts_.lr ? *opts_.lr : executor_.baseLearningRate();
  const int64_t lastStep = opts_.steps;
  // Checkpoint saves and loads report their wall time and size (the save's
  // in --metrics, on the step it follows).
  if (!opts_.resumePath.empty()) {
    int64_t saved = 0;
    auto start = std::chrono::steady_clock::now();
    CheckpointManifest loaded;
    auto watched = watch(watchdog_, "checkpoint load", 0);
    if (Status s = loadCheckpoint(executor_, opts_.resumePath, saved, &loaded); !s)
      return Status::error("--resume: " + s.message());
    watched.reset();
    if (saved > lastStep)
      return Status::error(cat("--resume: the checkpoint is at step ", saved,
                               ", already past --steps=", lastStep, " (the step to reach)"));
    firstStep_ = saved + 1;
    if (lead)
      std::printf("resumed from step %lld (%s checkpoint%s, %s in %.3f s)\n",
                  static_cast<long long>(saved),
                  loaded.format == CheckpointFormat::Full ? "full" : "sharded",
                  savedByThisPlan(executor_, loaded) ? "" : ", resharded", formatBytes(loaded.totalBytes()).c_str(),
                  since(start));
  }
  nextStep_ = firstStep_;
  // mpirun hands each rank a pseudo-terminal whatever the job's output is
  // (often a log file), so MPI runs print plain lines.
  bool terminal = isatty(STDOUT_FILENO) && !comm::launchedUnderMpi();
  progress_ = std::make_unique<Progress>(stdout, terminal, firstStep_, lastStep,
                                         opts_.logEvery ? *opts_.logEvery : defaultLogEvery(lastStep));
  return Status::ok();
}

Status TrainingRun::save(const std::string &dir, StepRecord *record) {
  const int64_t step = nextStep_ - 1;
  auto watched = watch(watchdog_, "checkpoint save", step);
  auto start = std::chrono::steady_clock::now();
  CheckpointManifest written;
  Status s = saveCheckpoint(executor_, dir, step, opts_.keep.value_or(0),
                            opts_.saveFormat.value_or(CheckpointFormat::Sharded), &written);
  if (s && record) {
    record->checkpointSeconds = since(start);
    record->checkpointBytes = written.totalBytes();
  }
  return s;
}

Status TrainingRun::runSteps(int64_t lastStep) {
  const bool lead = executor_.rank() == 0;
  const int64_t totalSteps = opts_.steps;
  for (int64_t step = nextStep_; step <= lastStep; ++step) {
    StepRecord record;
    DType lossType = DType::F32;
    record.step = step;
    record.totalSteps = totalSteps;
    record.lr = opts_.lrSchedule.at(baseLr_, step, totalSteps);
    auto start = std::chrono::steady_clock::now();
    Status s = data_->fill(step - 1);
    for (size_t i = 0; s && i < data_->inputs().size(); ++i)
      s = executor_.setInput(data_->inputs()[i], data_->batch()[i].ref());
    if (s)
      s = executor_.setLearningRate(record.lr);
    if (s)
      s = executor_.setStep(step);
    if (s)
      s = executor_.run(opts_.profile ? &profile_ : nullptr);
    if (s)
      s = executor_.getLoss(record.loss, &lossType);
    if (!s)
      return Status::error(cat("step ", step, ": ", s.message()));
    nextStep_ = step + 1;
    lastLoss_ = record.loss;
    // fp16 loss scaling (issue 19, C): the scale the step used, and
    // whether it skipped its update.
    if (std::optional<Executor::LossScaleOutcome> scaled = executor_.lastLossScale()) {
      record.lossScale = scaled->scale;
      record.skipped = scaled->skipped;
    }
    if (lead) {
      record.lossIsF64 = lossType == DType::F64;
      record.stepSeconds = since(start);
      record.samples = data_->samplesPerStep();
      record.tokens = data_->tokensPerStep();
      record.peakBytes = executor_.allocatedBytes();
      record.hostBytes = executor_.hostBytes();
      if (DeviceMemoryInfo memory; executor_.device().memoryInfo(memory))
        record.deviceContextBytes = memory.overheadBytes;
      progress_->update(record);
    }
    // Collective: every rank writes (or helps gather) its state.
    if (!opts_.saveDir.empty() &&
        (step == totalSteps || (opts_.saveEvery && step % *opts_.saveEvery == 0)))
      if (Status c = save(opts_.saveDir, &record); !c)
        return Status::error(cat("step ", step, ": --save: ", c.message()));
    if (lead && !opts_.metricsPath.empty())
      if (Status m = metrics_->write(record); !m)
        return m;
  }
  return Status::ok();
}

Status TrainingRun::finish() {
  const bool lead = executor_.rank() == 0;
  const int64_t lastStep = nextStep_ - 1;
  // Resumed at the step to reach: nothing to train, but --save writes the
  // loaded state in this plan's layout and format (a full checkpoint loaded
  // at another world size and saved again is resharded).
  if (firstStep_ > lastStep && !opts_.saveDir.empty())
    if (Status c = save(opts_.saveDir); !c)
      return Status::error("--save: " + c.message());
  if (lead && firstStep_ <= lastStep) { // a resume at the step to reach trains none
    progress_->finish();
    if (opts_.timing)
      std::printf("time per step: %.3f ms (%lld steps, %zu bytes planned)\n",
                  progress_->seconds() * 1e3 / (lastStep - firstStep_ + 1),
                  static_cast<long long>(lastStep - firstStep_ + 1), executor_.allocatedBytes());
  }
  // --profile: collective (every rank), rank 0 prints.
  if (opts_.profile && firstStep_ <= lastStep)
    if (Status s = reportProfile(executor_, profile_, opts_.device); !s)
      return s;
  if (!opts_.saveWeightsPath.empty()) {
    auto watched = watch(watchdog_, "--save-weights", lastStep);
    if (Status s = ModelState(executor_).saveWeights(opts_.saveWeightsPath); !s)
      return s;
    watched.reset();
    if (lead)
      std::printf("wrote %s (%zu parameters)\n", opts_.saveWeightsPath.c_str(),
                  executor_.parameterNames().size());
  }
  if (lead && !opts_.outputsDir.empty())
    return writeOutputs(opts_.outputsDir, executor_);
  return Status::ok();
}

Status runTraining(const RunOptions &opts, Executor &executor, CollectiveWatchdog *watchdog) {
  TrainingRun run(opts, executor, watchdog);
  Status s = run.begin();
  if (s)
    s = run.runSteps(opts.steps);
  if (s)
    s = run.finish();
  return s;
}

} // namespace fsdp::run
