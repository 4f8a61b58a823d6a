//===- ExecutorProfile.cpp - timing events of a profiled step -------------===//
//
// Profiling (Executor::run with a StepProfile, StepProfile.h): timing
// events on the plan's own streams, enqueued between its work (so the
// streams still overlap as in any step), read back once the step has
// synchronized. Device time only, through Device.h, so the CPU and CUDA
// devices measure alike. A profiled step enqueues eagerly (enqueueStep),
// since a captured graph holds no events between kernels.
//
//===----------------------------------------------------------------------===//

#include "runtime/exec/Executor.h"

#include "runtime/plan/KernelTable.h"
#include "runtime/plan/PlanCheck.h"

#include <algorithm>

namespace fsdp::rt {

Status Executor::beginProfiledStep() {
  if (timing_.empty()) {
    const size_t n = launches_.size();
    waitTimer_.assign(n, -1);
    size_t count = 2 * n;
    for (size_t i = 0; i < n; ++i)
      if (!waits_[i].empty())
        waitTimer_[i] = static_cast<int32_t>(count++);
    originTimer_ = count;
    count += 2 * streams_.size();
    timing_.resize(count);
    for (std::unique_ptr<Event> &event : timing_)
      if (Status s = device_.createEvent(EventFlags::Timing, event); !s) {
        timing_.clear();
        return s;
      }
  }
  // Every stream's start, before any of its work: the streams are idle
  // (the last step synchronized them), and the first to start work starts
  // the step, whichever its worker or hardware queue reaches first.
  for (size_t q = 0; q < streams_.size(); ++q)
    FSDP_RETURN_IF_ERROR(device_.recordEvent(*streams_[q], *timing_[originTimer_ + q]));
  return Status::ok();
}

Status Executor::endProfiledStep() {
  const size_t numStreams = streams_.size();
  for (size_t q = 0; q < numStreams; ++q)
    FSDP_RETURN_IF_ERROR(
        device_.recordEvent(*streams_[q], *timing_[originTimer_ + numStreams + q]));
  return Status::ok();
}

Status Executor::addProfile(StepProfile &profile) {
  const size_t n = launches_.size(), numStreams = streams_.size();
  if (profile.steps == 0) {
    profile.instructionSeconds.assign(n, 0.0);
    profile.streamBusySeconds.assign(numStreams, 0.0);
    profile.streamWaitSeconds.assign(numStreams, 0.0);
  }
  if (profile.instructionSeconds.size() != n || profile.streamBusySeconds.size() != numStreams)
    return Status::error(cat(plan_.path(), ": the step profile holds another plan's steps"));
  auto elapsed = [&](size_t from, size_t to, double &seconds) {
    return device_.elapsedSeconds(*timing_[from], *timing_[to], seconds);
  };
  // Times from stream 0's start (another stream's may be earlier: then
  // negative). The step runs from the first device stream's start to the
  // last one's end; stream 0 ends with its own work. The host stream
  // (--offload=cpu's optimizer) keeps the host's clock, which a GPU's
  // events cannot be compared with: it reports its own busy and waiting
  // time only, and is neither compute nor communication (as predicted).
  double stepStart = 0, stepEnd = 0, computeEnd = 0;
  for (size_t q = 0; q < std::min<size_t>(numStreams, kHostStream); ++q) {
    double start = 0, end = 0;
    FSDP_RETURN_IF_ERROR(elapsed(originTimer_, originTimer_ + q, start));
    FSDP_RETURN_IF_ERROR(elapsed(originTimer_, originTimer_ + numStreams + q, end));
    stepStart = std::min(stepStart, start);
    stepEnd = std::max(stepEnd, end);
    if (q == 0)
      computeEnd = end;
  }
  double exposed = std::max(0.0, stepEnd - computeEnd);
  for (size_t i = 0; i < n; ++i) {
    const uint8_t q = streamOf_[i];
    double seconds = 0, waited = 0;
    FSDP_RETURN_IF_ERROR(elapsed(2 * i, 2 * i + 1, seconds));
    if (waitTimer_[i] >= 0)
      FSDP_RETURN_IF_ERROR(elapsed(waitTimer_[i], 2 * i, waited));
    profile.instructionSeconds[i] += seconds;
    profile.streamBusySeconds[q] += seconds;
    profile.streamWaitSeconds[q] += waited;
    if (q == 0)
      exposed += waited + (isCollective(launches_[i].kernel) ? seconds : 0.0);
  }
  profile.stepSeconds += stepEnd - stepStart;
  profile.exposedCommunicationSeconds += exposed;
  ++profile.steps;
  return Status::ok();
}

} // namespace fsdp::rt
