//===- StepSession.h - a compiled step driven a few steps at a time -------===//
//
// What the C entry points of runtime/embed/fsdp_step.h run on: fsdp-run's
// driver kept alive between calls. A session parses fsdp-run's flags, loads
// the step's plan, and sets up its ranks exactly as runDriver does (the
// plan's N ranks as threads of this process, or this process as its rank
// of an mpirun or torchrun job), then trains when asked: run(K) takes the
// next K steps on every rank, save(DIR) writes a checkpoint, finish() does
// what the end of an fsdp-run run does (--save, --save-weights, --outputs).
// In-process ranks keep one thread each for the session's life, so a rank's
// device is always used from the same thread. Training plans only (a
// forward plan runs through fsdp_step_main). A failure on any rank aborts
// the group, as in fsdp-run; the session then refuses further work.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_STEPSESSION_H
#define FSDP_RUNTIME_RUN_STEPSESSION_H

#include "runtime/embed/EmbeddedStep.h"
#include "runtime/support/Status.h"

#include <cstdint>
#include <memory>
#include <string>

namespace fsdp::run {

class StepSession {
public:
  /// `argv` as fsdp-run's (argv[0] names the program; no plan argument).
  static rt::Status create(const FsdpEmbeddedStep &step, int argc, char **argv,
                           std::unique_ptr<StepSession> &out);
  ~StepSession();
  /// The next `steps` steps; `lastLoss` is the last one's loss.
  rt::Status run(int64_t steps, double &lastLoss);
  /// A checkpoint of the state after the last step taken, in --save-format.
  rt::Status save(const std::string &dir);
  /// The end of the run (summary, --save, --save-weights, --outputs).
  rt::Status finish();
  /// The last step taken (0 before any; a resumed run's checkpoint step).
  int64_t step() const;

  struct State;

private:
  explicit StepSession(std::unique_ptr<State> state);
  std::unique_ptr<State> state_;
};

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_STEPSESSION_H
