//===- StepTrace.h - the planned step as a timeline picture ---------------===//
//
// `fsdp-opt --emit=trace` draws the step a plan will run before it runs:
// each instruction placed on its stream at the time the cost model
// (compiler/Analysis/CostModel.h) predicts, and the arena bytes live
// around it (the liveness replay of compiler/Analysis/MemoryReport.h) plus
// the persistent region as the memory curve. Two renderings of one
// timeline:
//   - Chrome / Perfetto trace JSON ("traceEvents"): one process per rank,
//     one thread per stream, an "X" event per instruction (kernel, source
//     node, operand and result sizes, predicted duration) and a "C"
//     counter track of memory. Open in ui.perfetto.dev or chrome://tracing.
//   - A self-contained HTML page (inline SVG, no script) with the per-stream
//     timeline and the memory-over-time curve, for a browser.
// The plan is SPMD: every rank runs the same instructions at the same
// predicted times, so the ranks' tracks are copies (at most 8 are written).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_COMPILER_ANALYSIS_STEPTRACE_H
#define FSDP_COMPILER_ANALYSIS_STEPTRACE_H

#include "compiler/Analysis/CostModel.h"

#include <cstdint>
#include <string>
#include <vector>

namespace fsdp {

/// The most ranks a trace lists.
inline constexpr uint32_t kMaxTraceRanks = 8;

/// Chrome trace event JSON of `plan`'s predicted `step`; `liveBytes` is
/// arenaLiveBytes(plan).
std::string renderChromeTrace(const plan::Plan &plan, const StepPrediction &step,
                              const std::vector<uint64_t> &liveBytes);

/// The same timeline as one HTML page with inline SVG.
std::string renderTimelineHtml(const plan::Plan &plan, const StepPrediction &step,
                               const std::vector<uint64_t> &liveBytes);

} // namespace fsdp

#endif // FSDP_COMPILER_ANALYSIS_STEPTRACE_H
