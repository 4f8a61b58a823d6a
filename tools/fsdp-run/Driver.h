//===- Driver.h - fsdp-run's command line and shared helpers --------------===//
//
// What fsdp-run.cpp parses and the forward and training runs (Train.cpp)
// read, plus the helpers both use: the one-line error exit and writing
// outputs (--profile's tables are ProfileReport.h's). Flags that only
// training plans take are optional values here, so a run can tell "not
// given" from any value and refuse them on a forward plan. Runs return a Status rather than exiting:
// with several ranks in one process, the driver reports the rank that
// failed first once, after every rank has stopped.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_RUN_DRIVER_H
#define FSDP_TOOLS_FSDP_RUN_DRIVER_H

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/embed/EmbeddedStep.h"
#include "runtime/exec/Executor.h"
#include "runtime/train/LrSchedule.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

/// Returns the error of `expr` as it is: fsdp-run's messages are one line,
/// without the origin FSDP_RETURN_IF_ERROR adds.
#define FSDP_RUN_RETURN_IF_FAILED(expr)                                        \
  do {                                                                         \
    if (::fsdp::rt::Status fsdpRunStatus_ = (expr); !fsdpRunStatus_)           \
      return fsdpRunStatus_;                                                   \
  } while (false)

namespace fsdp::run {

struct RunOptions {
  /// A compiled step binary's step (plan and weights built in), or null.
  const FsdpEmbeddedStep *embedded = nullptr;
  std::string planPath, outputsDir, weightsPath;
  std::map<std::string, std::string> inputs; // name -> .npy path
  int64_t steps = 1; // training: the step to reach (a resumed run starts past 1)
  /// --max-steps: the length of the whole run, which the learning-rate
  /// schedule spans (a chain of resumed jobs gives each the same), >= steps.
  std::optional<int64_t> maxSteps;
  int64_t scheduleSteps() const { return maxSteps.value_or(steps); }
  std::optional<int64_t> worldSize;
  /// --device, a name of runtime/device/DeviceRegistry.h; when not given,
  /// defaultDeviceName() (cuda with a GPU, else cpu).
  std::string device;
  bool tf32 = false;               // --tf32 (cuda only)
  std::optional<bool> cudaGraphs;  // --cuda-graphs=on|off (cuda only; on when not given)
  bool dump = false, timing = false, profile = false;
  /// --collective-timeout: seconds a collective of a multi-rank run may
  /// take before the watchdog aborts the run (Watchdog.h).
  double collectiveTimeout = 600;
  // Training plans only.
  std::string dataPath, metricsPath, saveWeightsPath;
  std::string plotPath; // --plot: the run's metrics as a page (runtime/train/RunPlot.h)
  std::optional<std::string> lrScheduleText;
  rt::LrSchedule lrSchedule;
  std::optional<double> lr;
  std::optional<int64_t> logEvery;
  // Checkpoints (runtime/checkpoint/Checkpoint.h).
  std::string saveDir, resumePath;
  std::optional<int64_t> saveEvery, keep;
  std::optional<rt::CheckpointFormat> saveFormat; // --save-format, sharded when not given
  /// Training under fsdp-run (not an embedding program): SIGTERM and SIGINT
  /// stop the run after the step (StopSignals.h), which every rank agrees
  /// on once a step.
  bool stopOnSignals = false;
  // Validation (Eval.h): a token file or one .npy per input, how often
  // (every K steps; after the last step only when not given) and how many
  // batches (every whole batch of the data when not given).
  std::string evalDataPath;
  std::map<std::string, std::string> evalInputs; // name -> .npy path
  std::optional<int64_t> evalEvery, evalBatches;
};

/// fsdp-run's program: parses argv (fsdp-run's flags), runs and returns the
/// exit code. With `step` (a compiled step binary's fsdp_embedded_step),
/// the plan is the step's and argv takes none; messages and --help use
/// argv[0]'s basename where fsdp-run's say "fsdp-run".
int runDriver(int argc, char **argv, const FsdpEmbeddedStep *step);

/// Parses fsdp-run's flags (argv[1..argc)) into `opts`, which
/// prepareOptions has prepared: returns 0 to go on, or the exit code
/// (1 after printing the error). --help prints the usage, sets `exitNow`
/// and returns 0. Reads no file: the plan and data are checked later.
int parseRunArgs(int argc, char **argv, RunOptions &opts, bool &exitNow);

/// What runDriver does with `step` before parsing: the program name, the
/// plan's name (the executable's path) and the process-wide step.
void prepareOptions(int argc, char **argv, const FsdpEmbeddedStep *step, RunOptions &opts);

/// "fsdp-run", or a compiled step binary's name.
const std::string &programName();

/// Prints "PROGRAM: error: MESSAGE" on stderr and returns exit code 1.
int fail(const std::string &message);

/// Writes each graph output to DIR/<name>.npy.
rt::Status writeOutputs(const std::string &dir, const rt::Executor &executor);

} // namespace fsdp::run

#endif // FSDP_TOOLS_FSDP_RUN_DRIVER_H
