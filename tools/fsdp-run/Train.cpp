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

Status runTraining(const RunOptions &opts, Executor &executor, CollectiveWatchdog *watchdog) {
  std::unique_ptr<DataSource> data;
  if (Status s = openData(opts, executor, data); !s)
    return s;
  const bool lead = executor.rank() == 0; // reports and writes files
  MetricsFile metrics;
  if (lead && !opts.metricsPath.empty())
    if (Status s = metrics.open(opts.metricsPath); !s)
      return s;
  double baseLr = opts.lr ? *opts.lr : executor.baseLearningRate();
  int64_t firstStep = 1, lastStep = opts.steps;
  // Checkpoint saves and loads report their wall time and size (the save's
  // in --metrics, on the step it follows).
  auto since = [](std::chrono::steady_clock::time_point start) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  // Checkpoints gather and agree over the world between file writes: one
  // watched host call each (CollectiveWatchdog.h).
  auto watch = [&](const char *what, int64_t step) {
    std::optional<CollectiveWatchdog::HostCall> call;
    if (watchdog)
      call.emplace(watchdog->hostCall(what, "world", CollectiveRecord::kUnknownBytes, step));
    return call;
  };
  auto save = [&](int64_t step, StepRecord *record) {
    auto watched = watch("checkpoint save", step);
    auto start = std::chrono::steady_clock::now();
    CheckpointManifest written;
    Status s = saveCheckpoint(executor, opts.saveDir, step, opts.keep.value_or(0),
                              opts.saveFormat.value_or(CheckpointFormat::Sharded),
                              &written);
    if (s && record) {
      record->checkpointSeconds = since(start);
      record->checkpointBytes = written.totalBytes();
    }
    return s;
  };
  if (!opts.resumePath.empty()) {
    int64_t saved = 0;
    auto start = std::chrono::steady_clock::now();
    CheckpointManifest loaded;
    auto watched = watch("checkpoint load", 0);
    if (Status s = loadCheckpoint(executor, opts.resumePath, saved, &loaded); !s)
      return Status::error("--resume: " + s.message());
    watched.reset();
    if (saved > lastStep)
      return Status::error(cat("--resume: the checkpoint is at step ", saved,
                               ", already past --steps=", lastStep, " (the step to reach)"));
    firstStep = saved + 1;
    if (lead)
      std::printf("resumed from step %lld (%s checkpoint%s, %s in %.3f s)\n",
                  static_cast<long long>(saved),
                  loaded.format == CheckpointFormat::Full ? "full" : "sharded",
                  savedByThisPlan(executor, loaded) ? "" : ", resharded", formatBytes(loaded.totalBytes()).c_str(),
                  since(start));
  }
  // mpirun hands each rank a pseudo-terminal whatever the job's output is
  // (often a log file), so MPI runs print plain lines.
  bool terminal = isatty(STDOUT_FILENO) && !comm::launchedUnderMpi();
  Progress progress(stdout, terminal, firstStep, lastStep,
                    opts.logEvery ? *opts.logEvery : defaultLogEvery(lastStep));
  StepProfile profile;
  for (int64_t step = firstStep; step <= lastStep; ++step) {
    StepRecord record;
    DType lossType = DType::F32;
    record.step = step;
    record.totalSteps = lastStep;
    record.lr = opts.lrSchedule.at(baseLr, step, lastStep);
    auto start = std::chrono::steady_clock::now();
    Status s = data->fill(step - 1);
    for (size_t i = 0; s && i < data->inputs().size(); ++i)
      s = executor.setInput(data->inputs()[i], data->batch()[i].ref());
    if (s)
      s = executor.setLearningRate(record.lr);
    if (s)
      s = executor.setStep(step);
    if (s)
      s = executor.run(opts.profile ? &profile : nullptr);
    if (s)
      s = executor.getLoss(record.loss, &lossType);
    if (!s)
      return Status::error(cat("step ", step, ": ", s.message()));
    if (lead) {
      record.lossIsF64 = lossType == DType::F64;
      record.stepSeconds = since(start);
      record.samples = data->samplesPerStep();
      record.tokens = data->tokensPerStep();
      record.peakBytes = executor.allocatedBytes();
      record.hostBytes = executor.hostBytes();
      if (DeviceMemoryInfo memory; executor.device().memoryInfo(memory))
        record.deviceContextBytes = memory.overheadBytes;
      progress.update(record);
    }
    // Collective: every rank writes (or helps gather) its state.
    if (!opts.saveDir.empty() &&
        (step == lastStep || (opts.saveEvery && step % *opts.saveEvery == 0)))
      if (Status c = save(step, &record); !c)
        return Status::error(cat("step ", step, ": --save: ", c.message()));
    if (lead && !opts.metricsPath.empty())
      if (Status m = metrics.write(record); !m)
        return m;
  }
  // Resumed at the step to reach: nothing to train, but --save writes the
  // loaded state in this plan's layout and format (a full checkpoint loaded
  // at another world size and saved again is resharded).
  if (firstStep > lastStep && !opts.saveDir.empty())
    if (Status c = save(lastStep, nullptr); !c)
      return Status::error("--save: " + c.message());
  if (lead && firstStep <= lastStep) { // a resume at the step to reach trains none
    progress.finish();
    if (opts.timing)
      std::printf("time per step: %.3f ms (%lld steps, %zu bytes planned)\n",
                  progress.seconds() * 1e3 / (lastStep - firstStep + 1),
                  static_cast<long long>(lastStep - firstStep + 1), executor.allocatedBytes());
  }
  // --profile: collective (every rank), rank 0 prints.
  if (opts.profile && firstStep <= lastStep)
    if (Status s = reportProfile(executor, profile, opts.device); !s)
      return s;
  if (!opts.saveWeightsPath.empty()) {
    auto watched = watch("--save-weights", lastStep);
    if (Status s = ModelState(executor).saveWeights(opts.saveWeightsPath); !s)
      return s;
    watched.reset();
    if (lead)
      std::printf("wrote %s (%zu parameters)\n", opts.saveWeightsPath.c_str(),
                  executor.parameterNames().size());
  }
  if (lead && !opts.outputsDir.empty())
    return writeOutputs(opts.outputsDir, executor);
  return Status::ok();
}

} // namespace fsdp::run
