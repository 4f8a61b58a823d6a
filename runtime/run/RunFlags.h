//===- RunFlags.h - fsdp-run's options and its flag table -----------------===//
//
// What fsdp-run's command line says (RunOptions) and the table of flags
// that says it (RunFlags.def, expanded once in RunFlags.cpp): the parser,
// --help, the training-only rule and the generated docs/run-flags.md all
// read the same rows, so a flag, its help and its docs cannot drift apart.
// Flags that only training plans take are optional values (or empty
// strings) here, so a run can tell "not given" from any value and refuse
// them on a forward plan.
//
// The parser is our own rather than LLVM's cl or CLI11: fsdp-run links the
// runtime only (no LLVM), its parse runs again inside a program embedding a
// step (fsdp_step_init, where errors are returned, never printed or
// exit()ed), and its messages ("--steps: invalid value '0'; must be an
// integer >= 1") are part of what tests and users rely on.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_RUNFLAGS_H
#define FSDP_RUNTIME_RUN_RUNFLAGS_H

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/embed/EmbeddedStep.h"
#include "runtime/support/Status.h"
#include "runtime/train/LrSchedule.h"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

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

/// Which plans take a flag: training-only flags are refused on a forward
/// plan.
enum class FlagPlans { Any, Training };

/// One row of RunFlags.def.
struct RunFlag {
  const char *name;  // "--steps"
  const char *value; // "K"; "" for a switch
  FlagPlans plans;
  const char *help; // lines joined by '\n'
  bool takesValue;  // false: a switch, given without '='
  bool repeatable;  // NAME=FILE flags, once per name
  /// Parses `value` into its field of `opts`, or says why not.
  rt::Status (*parse)(const RunFlag &flag, const std::string &value, RunOptions &opts);
  /// Training-only flags: whether `opts` holds one (null for the others).
  bool (*given)(const RunOptions &opts);
};

/// Every flag, in RunFlags.def's order.
const std::vector<RunFlag> &runFlags();

/// Parses fsdp-run's flags (argv[1..argc)) into `opts`, which
/// prepareOptions (Driver.h) has prepared: returns 0 to go on, or the exit
/// code (1 after printing the error through fail()). --help prints the
/// usage, --help-markdown the flags as docs/run-flags.md has them; both set
/// `exitNow` and return 0. Reads no file: the plan and data are checked
/// later.
int parseRunArgs(int argc, char **argv, RunOptions &opts, bool &exitNow);

/// The --help text: fsdp-run's, or for a compiled step binary the same
/// with the binary's name for "fsdp-run PLAN" and, after it, what the step
/// was compiled from.
std::string runUsage(const FsdpEmbeddedStep *step);

/// The flags as Markdown (docs/run-flags.md); `error` is set, and the text
/// empty, when a row of the table lacks a name or help.
std::string runFlagsMarkdown(std::string &error);

/// The first training-only flag `opts` holds, in the table's order, or "".
std::string trainingFlagGiven(const RunOptions &opts);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_RUNFLAGS_H
