//===- ProfileReport.h - what fsdp-run --profile prints -------------------===//
//
// After the profiled steps (every step of the run under --profile), rank 0
// prints two tables from the executor's StepProfile (runtime/exec/
// StepProfile.h): the time per kernel, and the step's overlap: each
// stream's busy and waiting time, the step, the exposed communication,
// and beside them the cost model's prediction for the same plan (plan.fbs
// CostPrediction, what fsdp-opt --emit=report prints), labelled with its
// device profile. A prediction for a GPU is not comparable with a run on
// the CPU, and the table says so. With several ranks, every rank takes
// part in one small all-gather of its step and exposed time, so rank 0
// also prints the largest over the ranks.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_RUN_PROFILEREPORT_H
#define FSDP_RUNTIME_RUN_PROFILEREPORT_H

#include "runtime/exec/Executor.h"
#include "runtime/exec/StepProfile.h"

#include <cstdio>
#include <string>

namespace fsdp::run {

/// Collective over the executor's world: every rank calls it once after
/// its profiled steps; rank 0 prints both tables to `out`. `device` is the
/// device the run used (fsdp-run --device).
rt::Status reportProfile(const rt::Executor &executor, const rt::StepProfile &profile,
                         const std::string &device, std::FILE *out = stdout);

} // namespace fsdp::run

#endif // FSDP_RUNTIME_RUN_PROFILEREPORT_H
