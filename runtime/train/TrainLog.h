//===- TrainLog.h - what a training run reports per step ------------------===//
//
// One record per optimizer step, rendered two ways: a JSON object per line
// for `--metrics` files (keys step, loss, lr, samples_per_s, tokens_per_s
// for token runs, step_time_s, peak_bytes, host_bytes and
// device_context_bytes when there are any, val_loss and eval_time_s after
// a validation, loss_scale and skipped under fp16 loss scaling; the loss
// printed with 9
// significant digits for f32 (17 for f64) so parsing it back in its own
// type gives the same bits),
// and a short human line for the console. MetricsFile flushes every line,
// so a run that crashes keeps the lines of the steps it took. The console
// cadence (which steps print a line when stdout is not a terminal) lives
// here too, so every runner logs the same steps.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_TRAIN_TRAINLOG_H
#define FSDP_RUNTIME_TRAIN_TRAINLOG_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

namespace fsdp::rt {

struct StepRecord {
  int64_t step = 0;       // the 1-based step just taken
  int64_t totalSteps = 0; // the step the run ends at
  double loss = 0;
  bool lossIsF64 = false; // printed with 17 digits instead of 9
  double lr = 0;
  double stepSeconds = 0; // wall time of the step, input staging included
  int64_t samples = 0;    // global samples per step (B)
  int64_t tokens = 0;     // global tokens per step (B*T); 0: not a token run
  uint64_t peakBytes = 0; // plan-managed bytes the runtime allocated
  uint64_t hostBytes = 0; // host memory holding offloaded state (0: none)
  /// Device memory in use beyond the plan's (a GPU's context, cuBLAS
  /// workspaces, allocation rounding; Device::memoryInfo): only for devices
  /// with memory of their own.
  std::optional<uint64_t> deviceContextBytes;
  /// The total gradient norm before clipping, when the plan outputs it
  /// (fsdp-opt --clip-grad-norm or --log-grad-norm).
  std::optional<double> gradNorm;
  /// A checkpoint saved after this step: its wall time (-1: none saved)
  /// and the bytes it wrote.
  double checkpointSeconds = -1;
  uint64_t checkpointBytes = 0;
  /// Validation (fsdp-run --eval-data) run after this step: the mean loss
  /// over its batches and ranks ("val_loss", 17 digits) and its wall time
  /// ("eval_time_s"), which stepSeconds does not include.
  std::optional<double> valLoss;
  double evalSeconds = 0;
  // --- fp16 dynamic loss scaling (issue 19, C): the scale this step used
  // ("loss_scale") and whether its update was skipped for an inf/NaN
  // gradient ("skipped"); unset without loss scaling.
  std::optional<double> lossScale;
  std::optional<bool> skipped;
};

/// The JSON object of a --metrics line, without the newline. A non-finite
/// loss (or grad_norm, present when recorded) is written as null (JSON has
/// no NaN).
std::string metricsLine(const StepRecord &record);
/// "step 5/100 loss 4.123456 lr 1.000e-03 1234 tok/s 12.3 MiB"; runs
/// without tokens show samples/s, runs with a gradient norm show
/// "grad_norm 1.234" after the lr.
std::string consoleLine(const StepRecord &record);
/// `value` through the printf format `fmt` (one double conversion).
std::string formatNumber(const char *fmt, double value);

/// The console cadence when none is given: every step up to 50 steps,
/// otherwise about 50 lines per run.
int64_t defaultLogEvery(int64_t totalSteps);
/// Whether `step` prints a line: every `every` steps, plus always the
/// run's first and last step.
bool shouldLog(int64_t step, int64_t firstStep, int64_t lastStep, int64_t every);

/// A --metrics file, truncated on open, one flushed line per step.
class MetricsFile {
public:
  MetricsFile() = default;
  MetricsFile(const MetricsFile &) = delete;
  MetricsFile &operator=(const MetricsFile &) = delete;
  ~MetricsFile();

  Status open(const std::string &path);
  Status write(const StepRecord &record);

private:
  std::string path_;
  FILE *file_ = nullptr;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_TRAINLOG_H
