//===- Train.cpp - fsdp-run on a training plan ----------------------------===//
//
// Each rank feeds its own samples (the data contract's RankLayout) and
// runs the same compiled step; the loss a sharded plan outputs is already
// the global mean (the compiler all-reduces it), so rank 0's is the run's.
// Only rank 0 prints, writes --metrics and --plot and writes outputs; --save-weights
// is collective (every rank contributes its shards, rank 0 writes), and so
// are --save's checkpoints (every rank writes its own state) and --resume. A
// step's time covers staging its inputs, the compiled step and reading the
// loss back: what a user waits for.
//
//===----------------------------------------------------------------------===//

#include "runtime/run/Train.h"

#include "runtime/comm/MpiCommunicator.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/ModelState.h"
#include "runtime/plan/plan_generated.h"
#include "runtime/support/ByteSize.h"
#include "runtime/train/DataSource.h"
#include "runtime/train/MetricsReader.h"
#include "runtime/train/RunPlot.h"
#include "runtime/train/TrainLog.h"
#include "runtime/run/Eval.h"
#include "runtime/run/Forward.h"
#include "runtime/run/ProfileReport.h"
#include "runtime/run/Progress.h"
#include "runtime/run/StopSignals.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <optional>
#include <string>
#include <vector>

namespace fsdp::run {

using namespace fsdp::rt;

Status openData(const DataFlags &flags, Executor &executor, std::unique_ptr<DataSource> &source) {
  std::vector<InputSpec> specs;
  for (const std::string &name : executor.inputNames()) {
    InputSpec spec;
    spec.name = name;
    if (Status s = executor.inputType(name, spec.dtype, spec.shape); !s)
      return s;
    specs.push_back(std::move(spec));
  }
  RankLayout layout{executor.rank(), executor.worldSize(),
                    static_cast<int64_t>(executor.plan().plan().grad_accum()), flags.evaluation};
  const std::string data = flags.dataFlag, input = flags.inputFlag;
  if (!flags.dataPath.empty()) {
    if (!flags.inputs.empty())
      return Status::error(input + "=" + flags.inputs.begin()->first +
                           ": the plan's inputs come from " + data + "=" + flags.dataPath +
                           " (give " + data + " or " + input + ", not both)");
    return openTokenFile(specs, flags.dataPath, layout, source);
  }
  for (const InputSpec &spec : specs)
    if (!flags.inputs.count(spec.name))
      return Status::error("missing " + input + "=" + spec.name +
                           "=FILE.npy (a training plan takes each input as a .npy of samples "
                           "stacked on dimension 0, or " + data + "=FILE for token models)");
  return openSampleFiles(specs, flags.inputs, layout, source);
}

namespace {
/// The plot's title: the model, the plan and how it is distributed.
std::string plotTitle(const RunOptions &opts, const Executor &executor) {
  auto baseName = [](const std::string &path) {
    size_t slash = path.find_last_of('/');
    return slash == std::string::npos ? path : path.substr(slash + 1);
  };
  const plan::Plan &p = executor.plan().plan();
  std::string title = p.source() ? baseName(p.source()->str()) : "";
  const std::string planName = baseName(opts.planPath);
  if (!planName.empty())
    title += (title.empty() ? "" : ", plan ") + planName;
  title += cat(", world size ", executor.worldSize());
  if (p.strategy() && p.strategy()->size())
    title += ", --shard=" + p.strategy()->str();
  return title;
}

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
  if (Status s = openData({opts_.dataPath, opts_.inputs, "--data", "--input"}, executor_, data_);
      !s)
    return s;
  if (!opts_.evalDataPath.empty() || !opts_.evalInputs.empty())
    if (Status s = Evaluation::open(opts_, executor_, eval_); !s)
      return s;
  const bool lead = executor_.rank() == 0; // reports and writes files
  metrics_ = std::make_unique<MetricsFile>();
  if (lead && !opts_.metricsPath.empty())
    if (Status s = metrics_->open(opts_.metricsPath); !s)
      return s;
  if (lead && !opts_.plotPath.empty()) {
    plotTitle_ = plotTitle(opts_, executor_);
    // Written now, empty, so an unwritable path fails before any step.
    if (Status s = writeRunPlot(opts_.plotPath, plotRecords_, plotTitle_); !s)
      return Status::error("--plot: " + s.message());
  }
  baseLr_ = opts_.lr ? *opts_.lr : executor_.baseLearningRate();
  // A plan compiled with --clip-grad-norm or --log-grad-norm outputs the
  // step's gradient norm (compiler/Transforms/ClipGradients.h): looked up
  // once here, not on each runSteps call (StepSession's are often 1 step).
  const std::vector<std::string> outputs = executor_.outputNames();
  gradNorm_ = std::find(outputs.begin(), outputs.end(), "grad_norm") != outputs.end();
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
  logEvery_ = opts_.logEvery ? *opts_.logEvery : defaultLogEvery(lastStep);
  progress_ = std::make_unique<Progress>(stdout, terminal, firstStep_, lastStep, logEvery_);
  return Status::ok();
}

int TrainingRun::agreeOnStop(int64_t step, Status &status) {
  const int mine = stopSignal();
  Communicator &world = executor_.world();
  if (world.size() == 1)
    return mine;
  // One integer per rank: the lowest rank that took a signal names it.
  auto watched = watch(watchdog_, "stop agreement (allGather of the stop flag)", step);
  int64_t local = mine;
  std::vector<int64_t> all(static_cast<size_t>(world.size()));
  status = world.allGather(&local, all.data(), 1, DType::I64);
  for (int64_t signal : all)
    if (signal != 0)
      return static_cast<int>(signal);
  return 0;
}

Status TrainingRun::save(const std::string &dir, StepRecord *record) {
  const int64_t step = nextStep_ - 1;
  auto watched = watch(watchdog_, "checkpoint save", step);
  auto start = std::chrono::steady_clock::now();
  CheckpointManifest written;
  Status s = saveCheckpoint(executor_, dir, step, opts_.keep.value_or(0),
                            opts_.saveFormat.value_or(CheckpointFormat::Sharded), &written);
  if (s)
    savedDir_ = written.dir;
  if (s && record) {
    record->checkpointSeconds = since(start);
    record->checkpointBytes = written.totalBytes();
  }
  return s;
}

Status TrainingRun::runSteps(int64_t lastStep) {
  const bool lead = executor_.rank() == 0;
  const int64_t totalSteps = opts_.steps, scheduleSteps = opts_.scheduleSteps();
  for (int64_t step = nextStep_; step <= lastStep; ++step) {
    StepRecord record;
    DType lossType = DType::F32;
    record.step = step;
    record.totalSteps = totalSteps;
    record.lr = opts_.lrSchedule.at(baseLr_, step, scheduleSteps);
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
    if (s && gradNorm_) {
      record.gradNorm.emplace();
      s = executor_.getScalarOutput("grad_norm", *record.gradNorm, nullptr, "grad_norm");
    }
    if (!s)
      return Status::error(cat("step ", step, ": ", s.message()));
    nextStep_ = step + 1;
    lastLoss_ = record.loss;
    record.stepSeconds = since(start);
    // Collective: every rank evaluates its share of the batches.
    if (eval_ && eval_->dueAfter(step, totalSteps)) {
      auto evalStart = std::chrono::steady_clock::now();
      double valLoss = 0;
      if (Status v = eval_->run(valLoss); !v)
        return Status::error(cat("step ", step, ": evaluation: ", v.message()));
      record.valLoss = valLoss;
      record.evalSeconds = since(evalStart);
    }
    // fp16 loss scaling (issue 19, C): the scale the step used, and
    // whether it skipped its update.
    if (std::optional<Executor::LossScaleOutcome> scaled = executor_.lastLossScale()) {
      record.lossScale = scaled->scale;
      record.skipped = scaled->skipped;
    }
    if (lead) {
      record.lossIsF64 = lossType == DType::F64;
      record.samples = data_->samplesPerStep();
      record.tokens = data_->tokensPerStep();
      record.peakBytes = executor_.allocatedBytes();
      record.hostBytes = executor_.hostBytes();
      if (DeviceMemoryInfo memory; executor_.device().memoryInfo(memory))
        record.deviceContextBytes = memory.overheadBytes;
      progress_->update(record);
    }
    // A stop signal (StopSignals.h) ends the run after this step on every
    // rank alike.
    if (opts_.stopOnSignals && step < totalSteps) {
      Status agreed = Status::ok();
      stoppedBy_ = agreeOnStop(step, agreed);
      if (!agreed)
        return Status::error(cat("step ", step, ": ", agreed.message()));
    }
    // Collective: every rank writes (or helps gather) its state.
    if (!opts_.saveDir.empty() && (step == totalSteps || stoppedBy_ != 0 ||
                                   (opts_.saveEvery && step % *opts_.saveEvery == 0)))
      if (Status c = save(opts_.saveDir, &record); !c)
        return Status::error(cat("step ", step, ": --save: ", c.message()));
    if (lead && !opts_.metricsPath.empty())
      if (Status m = metrics_->write(record); !m)
        return m;
    if (lead && !opts_.plotPath.empty())
      if (Status p = plotStep(record); !p)
        return p;
    if (stoppedBy_ != 0)
      break;
  }
  return Status::ok();
}

Status TrainingRun::plotStep(const StepRecord &record) {
  // The plot reads the --metrics line back, so it shows exactly the keys
  // the metrics file holds (fsdp-plot reads the same lines).
  MetricRecord parsed;
  if (Status s = parseMetricsLine(metricsLine(record), parsed); !s)
    return Status::error(cat("--plot: step ", record.step, ": ", s.message()));
  const bool evaluated = parsed.has("val_loss");
  plotRecords_.push_back(std::move(parsed));
  if (plotRecords_.size() > 2 * kPlotMaxSteps) // a long run: memory stays bounded
    plotRecords_ = thinRecords(plotRecords_);
  // Rewriting the page costs O(kPlotMaxSteps): on the printed steps
  // (about 50 a run) and evaluations it stays far below a step's time.
  if (!evaluated && !shouldLog(record.step, firstStep_, opts_.steps, logEvery_))
    return Status::ok();
  if (Status s = writeRunPlot(opts_.plotPath, plotRecords_, plotTitle_); !s)
    return Status::error("--plot: " + s.message());
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
  if (stoppedBy_ != 0) {
    // The run ends short of --steps: what it writes after its last step
    // (--save-weights, --outputs) would pass for the end of training.
    progress_->finish();
    if (lead)
      std::printf("%s\n", stopLine().c_str());
    return Status::ok();
  }
  if (lead && firstStep_ <= lastStep) { // a resume at the step to reach trains none
    progress_->finish();
    if (opts_.timing)
      std::printf("time per step: %.3f ms (%lld steps, %zu bytes planned)\n",
                  progress_->seconds() * 1e3 / (lastStep - firstStep_ + 1),
                  static_cast<long long>(lastStep - firstStep_ + 1), executor_.allocatedBytes());
  }
  // A run that stops before its last step (or whose last step printed no
  // line) still ends with every step it took on the page.
  if (lead && !opts_.plotPath.empty() && !plotRecords_.empty())
    if (Status s = writeRunPlot(opts_.plotPath, plotRecords_, plotTitle_); !s)
      return Status::error("--plot: " + s.message());
  // --profile: collective (every rank), rank 0 prints.
  if (opts_.profile && firstStep_ <= lastStep)
    if (Status s = reportProfile(executor_, profile_, opts_.device); !s)
      return s;
  if (!opts_.saveWeightsPath.empty()) {
    auto watched = watch(watchdog_, "--save-weights", lastStep);
    if (Status s = ModelState(executor_).saveWeights(opts_.saveWeightsPath); !s)
      return Status::error("--save-weights: " + s.message());
    watched.reset();
    if (lead)
      std::printf("wrote %s (%zu parameters)\n", opts_.saveWeightsPath.c_str(),
                  executor_.parameterNames().size());
  }
  if (lead && !opts_.outputsDir.empty())
    return writeOutputs(opts_.outputsDir, executor_);
  return Status::ok();
}

std::string TrainingRun::stopLine() const {
  const int64_t step = nextStep_ - 1;
  std::string line = cat("stopped by ", signalName(stoppedBy_), " after step ", step, " of ",
                         opts_.steps, "; ");
  if (opts_.saveDir.empty())
    line += "no checkpoint (no --save)";
  else
    line += cat("checkpoint ", savedDir_, " at step ", step, " (continue with --resume=",
                opts_.saveDir, ")");
  if (!opts_.saveWeightsPath.empty() || !opts_.outputsDir.empty())
    line += cat("; ", !opts_.saveWeightsPath.empty() ? "--save-weights" : "--outputs",
                " not written (the run did not reach --steps)");
  return line;
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
