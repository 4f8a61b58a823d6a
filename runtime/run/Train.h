//===- Train.h - fsdp-run on a training plan ------------------------------===//
//
// The training loop of fsdp-run: for steps 1..K, fill the plan's inputs from
// the data contract (sample files or a token file), write the learning rate
// of the schedule and the step number, run the compiled step, then report
// the loss (console, --metrics) and, after the last step, write the
// parameters (--save-weights) and outputs (--outputs). Every rank runs the
// loop on its own executor; only rank 0 reports and writes files. Under
// fsdp-run the ranks agree after each step whether a stop signal arrived
// (StopSignals.h); if so they save (--save) and end the run there.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_TRAIN_H
#define FSDP_RUNTIME_RUN_TRAIN_H

#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"
#include "runtime/train/DataSource.h"
#include "runtime/train/MetricsReader.h"
#include "runtime/train/TrainLog.h"
#include "runtime/run/Driver.h"

#include <map>
#include <memory>
#include <string>

namespace fsdp::run {

class Progress;
class Evaluation;

/// Where a run's samples come from: a token file or one .npy per input,
/// and the flags that named them (for messages).
struct DataFlags {
  const std::string &dataPath;
  const std::map<std::string, std::string> &inputs;
  const char *dataFlag, *inputFlag;
  bool evaluation = false; // batches of b x N samples in micro-batch 0's rows
};

/// The data source `flags` describe (the data contract, RankLayout), for
/// the executor's rank.
rt::Status openData(const DataFlags &flags, rt::Executor &executor,
                    std::unique_ptr<rt::DataSource> &source);

/// One rank's training run in three parts, so that a program embedding a
/// compiled step (fsdp_step.h) can take steps a few at a time: begin
/// (data, --metrics, --resume), runSteps (the next steps, with --save's
/// periodic checkpoints), finish (the summary, --profile, --save-weights,
/// --outputs, and the last --save). fsdp-run runs all three at once
/// (runTraining). `watchdog` (multi-rank runs) also watches each
/// checkpoint save and load as one host call.
class TrainingRun {
public:
  TrainingRun(const RunOptions &options, rt::Executor &executor,
              rt::CollectiveWatchdog *watchdog = nullptr);
  ~TrainingRun();
  rt::Status begin();
  /// Steps nextStep() .. lastStep (at most options.steps, the schedule's end:
  /// the caller checks).
  rt::Status runSteps(int64_t lastStep);
  /// Writes a checkpoint of the state after step nextStep() - 1 to `dir`
  /// (collective), as --save does.
  rt::Status save(const std::string &dir, rt::StepRecord *record = nullptr);
  rt::Status finish();
  int64_t nextStep() const { return nextStep_; }
  /// The signal that stopped the run early (options.stopOnSignals), or 0.
  int stoppedBy() const { return stoppedBy_; }
  /// The loss of the last step taken (rank 0's is the run's).
  double lastLoss() const { return lastLoss_; }

private:
  /// --plot: keeps the step's metrics and rewrites the page when due.
  rt::Status plotStep(const rt::StepRecord &record);

  const RunOptions &opts_;
  rt::Executor &executor_;
  rt::CollectiveWatchdog *watchdog_;
  std::unique_ptr<rt::DataSource> data_;
  std::unique_ptr<rt::MetricsFile> metrics_;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<Evaluation> eval_; // --eval-data / --eval-input (Eval.h)
  rt::StepProfile profile_;
  double baseLr_ = 0, lastLoss_ = 0;
  int64_t firstStep_ = 1, nextStep_ = 1, logEvery_ = 1;
  std::vector<rt::MetricRecord> plotRecords_; // rank 0, with --plot
  std::string plotTitle_;
  int stoppedBy_ = 0;    // a stop signal every rank agreed on
  bool gradNorm_ = false; // the plan outputs grad_norm (read each step)
  std::string savedDir_; // the last checkpoint written

  /// After step `step`: the stop signal any rank took, agreed by all
  /// (one allGather when there are several); `status` its failure.
  int agreeOnStop(int64_t step, rt::Status &status);
  /// "stopped by SIGTERM after step N of K; checkpoint DIR at step N ...".
  std::string stopLine() const;
};

/// Runs `options.steps` training steps of `executor`'s plan (weights
/// already loaded) as the executor's rank.
rt::Status runTraining(const RunOptions &options, rt::Executor &executor,
                       rt::CollectiveWatchdog *watchdog = nullptr);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_TRAIN_H
