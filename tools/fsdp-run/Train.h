//===- Train.h - fsdp-run on a training plan ------------------------------===//
//
// The training loop of fsdp-run: for steps 1..K, fill the plan's inputs from
// the data contract (sample files or a token file), write the learning rate
// of the schedule and the step number, run the compiled step, then report
// the loss (console, --metrics) and, after the last step, write the
// parameters (--save-weights) and outputs (--outputs). Every rank runs the
// loop on its own executor; only rank 0 reports and writes files.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_TOOLS_FSDP_RUN_TRAIN_H
#define FSDP_TOOLS_FSDP_RUN_TRAIN_H

#include "runtime/exec/CollectiveWatchdog.h"
#include "runtime/exec/Executor.h"
#include "tools/fsdp-run/Driver.h"

namespace fsdp::run {

/// Runs `options.steps` training steps of `executor`'s plan (weights
/// already loaded) as the executor's rank. `watchdog` (multi-rank runs)
/// also watches each checkpoint save and load as one host call.
rt::Status runTraining(const RunOptions &options, rt::Executor &executor,
                       rt::CollectiveWatchdog *watchdog = nullptr);

} // namespace fsdp::run

#endif // FSDP_TOOLS_FSDP_RUN_TRAIN_H
