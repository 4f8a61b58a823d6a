//===- Forward.h - fsdp-run on a forward plan -----------------------------===//
//
// A forward plan's run: every graph input bound from its --input file (the
// exact tensor, the same on every rank), the plan run --steps times (for
// --time), then --profile's tables and the outputs (--outputs). Writing
// the outputs is shared with the end of a training run (Train.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_FORWARD_H
#define FSDP_RUNTIME_RUN_FORWARD_H

#include "runtime/exec/Executor.h"
#include "runtime/support/Status.h"
#include "runtime/run/RunFlags.h"

#include <string>

namespace fsdp::run {

/// Runs `executor`'s forward plan (weights already loaded) as its rank;
/// only rank 0 prints and writes files.
rt::Status runForward(const RunOptions &opts, rt::Executor &executor);

/// Writes each graph output to DIR/<name>.npy.
rt::Status writeOutputs(const std::string &dir, const rt::Executor &executor);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_FORWARD_H
