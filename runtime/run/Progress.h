//===- Progress.h - fsdp-run's console report of a training run -----------===//
//
// On a terminal, one progress bar redrawn in place (step/K, loss, lr,
// throughput, memory), at most ten times a second and always on the last
// step; otherwise plain lines (TrainLog's consoleLine) at the cadence of
// --log-every, so logs piped to a file stay short. Either way a summary
// line closes the run.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_PROGRESS_H
#define FSDP_RUNTIME_RUN_PROGRESS_H

#include "runtime/train/TrainLog.h"

#include <chrono>
#include <cstdint>
#include <cstdio>

namespace fsdp::run {

class Progress {
public:
  Progress(FILE *out, bool terminal, int64_t firstStep, int64_t lastStep, int64_t logEvery);
  /// Reports a step just taken.
  void update(const rt::StepRecord &record);
  /// Ends the bar and prints the summary of the run.
  void finish();
  /// Total step time so far.
  double seconds() const { return seconds_; }

private:
  FILE *out_;
  bool terminal_, drawn_ = false;
  int64_t firstStep_, lastStep_, logEvery_;
  std::chrono::steady_clock::time_point lastDraw_;
  // Totals for the summary.
  rt::StepRecord last_;
  int64_t steps_ = 0;
  double seconds_ = 0;
};

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_PROGRESS_H
