//===- Driver.h - fsdp-run's entry and the helpers every part uses --------===//
//
// fsdp-run's program (runDriver) and what all of its parts share: the
// options (RunFlags.h), the program's name, the one-line error exit and
// the raw stderr write of the lines printed just before the process ends.
// Runs return a Status rather than exiting: with several ranks in one
// process, the driver reports the rank that failed first once, after every
// rank has stopped. The parts: RunFlags (the flags), Launch (which ranks
// this process runs and how they meet), RankRun (one rank's set-up and
// failure), Forward and Train (the two kinds of plan), StepSession (the
// same, a few steps at a time, for runtime/embed/fsdp_step.h).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_DRIVER_H
#define FSDP_RUNTIME_RUN_DRIVER_H

#include "runtime/embed/EmbeddedStep.h"
#include "runtime/support/Status.h"
#include "runtime/run/RunFlags.h"

#include <string>

/// Returns the error of `expr` as it is: fsdp-run's messages are one line,
/// without the origin FSDP_RETURN_IF_ERROR adds.
#define FSDP_RUN_RETURN_IF_FAILED(expr)                                        \
  do {                                                                         \
    if (::fsdp::rt::Status fsdpRunStatus_ = (expr); !fsdpRunStatus_)           \
      return fsdpRunStatus_;                                                   \
  } while (false)

namespace fsdp::run {

/// fsdp-run's program: parses argv (fsdp-run's flags), runs and returns the
/// exit code. With `step` (a compiled step binary's fsdp_embedded_step),
/// the plan is the step's and argv takes none; messages and --help use
/// argv[0]'s basename where fsdp-run's say "fsdp-run".
int runDriver(int argc, char **argv, const FsdpEmbeddedStep *step);

/// What runDriver does with `step` before parsing: the program name, the
/// plan's name (the executable's path) and the process-wide step.
void prepareOptions(int argc, char **argv, const FsdpEmbeddedStep *step, RunOptions &opts);

/// "fsdp-run", or a compiled step binary's name.
const std::string &programName();

/// Prints "PROGRAM: error: MESSAGE" on stderr and returns exit code 1.
int fail(const std::string &message);

/// Writes all of `text` to file descriptor 2 with write(2), past iostreams:
/// for the lines printed just before std::_Exit (the signal thread's and
/// the collective watchdog's termination report), which must not wait on a
/// std::cerr another thread may be in the middle of.
void writeStderr(const std::string &text);

/// While one lives, fail() on this thread keeps its message in `sink`
/// instead of printing it: a StepSession parses fsdp-run's flags, and the C
/// API returns errors rather than printing them.
class FailureCapture {
public:
  explicit FailureCapture(std::string &sink);
  ~FailureCapture();
  FailureCapture(const FailureCapture &) = delete;
  FailureCapture &operator=(const FailureCapture &) = delete;

private:
  std::string *previous_;
};

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_DRIVER_H
