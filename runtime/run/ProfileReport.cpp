//===- ProfileReport.cpp - what fsdp-run --profile prints -----------------===//
//
// Means per profiled step throughout, in milliseconds. The prediction is
// printed as the plan carries it, never recomputed here: fsdp-run links no
// cost model, and the numbers must be the ones --emit=report printed for
// the plan. Whether the two sides are comparable is decided by kind: the
// measurement is a GPU's only on the cuda device, and the prediction is a
// GPU's unless its profile is "cpu".
//
//===----------------------------------------------------------------------===//

#include "runtime/run/ProfileReport.h"

#include "runtime/plan/KernelTable.h"
#include "runtime/plan/plan_generated.h"

#include <algorithm>
#include <utility>
#include <vector>

namespace fsdp::run {

using namespace fsdp::rt;

namespace {

const char *streamName(size_t stream) {
  switch (stream) {
  case 0: return "compute";
  case 1: return "communication";
  case 2: return "copy";
  case 3: return "host optimizer"; // its own clock: outside the step's span
  }
  return "other";
}

double percentOf(double part, double whole) { return whole > 0 ? 100 * part / whole : 0; }

/// Per-kernel time, largest first, as milliseconds per step and a share.
void printKernelTable(const plan::Plan &plan, const StepProfile &profile, std::FILE *out) {
  std::vector<double> byKernel;
  for (size_t i = 0; i < profile.instructionSeconds.size(); ++i) {
    const auto kernel = static_cast<uint16_t>(plan.instructions()->Get(i)->kernel());
    if (byKernel.size() <= kernel)
      byKernel.resize(kernel + 1, 0.0);
    byKernel[kernel] += profile.instructionSeconds[i];
  }
  std::vector<std::pair<double, uint16_t>> rows;
  double total = 0;
  for (size_t k = 0; k < byKernel.size(); ++k)
    if (byKernel[k] > 0) {
      rows.emplace_back(byKernel[k], static_cast<uint16_t>(k));
      total += byKernel[k];
    }
  std::sort(rows.rbegin(), rows.rend());
  std::fprintf(out, "%-22s %10s %7s\n", "kernel", "ms/run", "share");
  for (const auto &[secs, kernel] : rows)
    std::fprintf(out, "%-22s %10.3f %6.1f%%\n", kernelName(kernel), secs * 1e3 / profile.steps,
                 percentOf(secs, total));
}

/// The largest step and exposed time over the ranks (this rank's alone
/// in a group of one). Collective.
Status maxOverRanks(const Executor &executor, const StepProfile &profile, double &step,
                    double &exposed) {
  step = profile.stepSeconds;
  exposed = profile.exposedCommunicationSeconds;
  Communicator &world = executor.world();
  if (world.size() == 1)
    return Status::ok();
  const double mine[2] = {step, exposed};
  std::vector<double> all(2 * world.size());
  FSDP_RETURN_IF_ERROR(world.allGather(mine, all.data(), 2, DType::F64));
  for (int r = 0; r < world.size(); ++r) {
    step = std::max(step, all[2 * r]);
    exposed = std::max(exposed, all[2 * r + 1]);
  }
  return Status::ok();
}

void printPrediction(const plan::Plan &plan, const std::string &device, std::FILE *out) {
  const plan::CostPrediction *c = plan.prediction();
  if (!c) {
    std::fprintf(out, "  predicted: none (the plan carries no cost prediction; plans written "
                      "by this fsdp-opt do)\n");
    return;
  }
  const std::string profile = c->device() ? c->device()->str() : "";
  std::fprintf(out,
               "  predicted for %s (cost model, fsdp-opt --device=%s): step %.4g ms, compute "
               "%.4g ms, communication %.4g ms, exposed communication %.4g ms (%.1f%% of the "
               "step)\n",
               profile.c_str(), profile.c_str(), c->step_s() * 1e3, c->compute_s() * 1e3,
               c->communication_s() * 1e3, c->exposed_communication_s() * 1e3,
               percentOf(c->exposed_communication_s(), c->step_s()));
  const bool measuredOnGpu = device == "cuda", predictedForGpu = profile != "cpu";
  if (measuredOnGpu != predictedForGpu)
    std::fprintf(out, "    not comparable: measured on the %s device, the prediction is for %s\n",
                 device.c_str(),
                 predictedForGpu ? ("a GPU (profile " + profile + ")").c_str() : "the cpu profile");
}

} // namespace

Status reportProfile(const Executor &executor, const StepProfile &profile,
                     const std::string &device, std::FILE *out) {
  double maxStep = 0, maxExposed = 0;
  FSDP_RETURN_IF_ERROR(maxOverRanks(executor, profile, maxStep, maxExposed));
  if (executor.rank() != 0 || profile.steps == 0)
    return Status::ok();
  const plan::Plan &plan = executor.plan().plan();
  printKernelTable(plan, profile, out);
  const double steps = static_cast<double>(profile.steps);
  const double step = profile.stepSeconds / steps;
  const double exposed = profile.exposedCommunicationSeconds / steps;
  const int ranks = executor.world().size();
  std::fprintf(out, "\noverlap (%s%s device, mean of %lld profiled step%s)\n",
               ranks > 1 ? "rank 0, " : "", device.c_str(),
               static_cast<long long>(profile.steps), profile.steps == 1 ? "" : "s");
  std::fprintf(out, "  %-22s %10s %10s\n", "stream", "busy ms", "waiting ms");
  for (size_t q = 0; q < profile.streamBusySeconds.size(); ++q)
    std::fprintf(out, "  %zu %-20s %10.3f %10.3f\n", q, streamName(q),
                 profile.streamBusySeconds[q] * 1e3 / steps,
                 profile.streamWaitSeconds[q] * 1e3 / steps);
  std::fprintf(out, "  measured: step %.4g ms, exposed communication %.4g ms (%.1f%% of the step)\n",
               step * 1e3, exposed * 1e3, percentOf(exposed, step));
  if (ranks > 1)
    std::fprintf(out,
                 "  largest over %d ranks: step %.4g ms, exposed communication %.4g ms\n", ranks,
                 maxStep * 1e3 / steps, maxExposed * 1e3 / steps);
  printPrediction(plan, device, out);
  return Status::ok();
}

} // namespace fsdp::run
