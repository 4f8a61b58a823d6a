//===- RunPlot.h - a training run's metrics as a page of charts -----------===//
//
// What fsdp-run --plot and fsdp-plot write: one self-contained HTML page
// (inline SVG, no script, nothing fetched; runtime/plot/SvgChart.h) with
// a chart per quantity over steps: loss with val_loss, learning rate,
// gradient norm, throughput (tokens/s, or samples/s for runs without
// tokens), memory per rank (peak_bytes, host_bytes, device_context_bytes)
// and loss_scale. A quantity the metrics never hold gets no chart, and the
// page says which flag logs it; a key a line lacks is simply not a point
// (val_loss on evaluation steps only), while a null value (a non-finite
// loss) breaks the line there.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_TRAIN_RUNPLOT_H
#define FSDP_RUNTIME_TRAIN_RUNPLOT_H

#include "runtime/support/Status.h"
#include "runtime/train/MetricsReader.h"

#include <string>
#include <vector>

namespace fsdp::rt {

/// About the most steps a page draws: a longer run's lines are thinned
/// (thinRecords), so neither the page nor fsdp-run's memory grows with
/// the run.
constexpr size_t kPlotMaxSteps = 2000;

/// `records` (in step order) with at most about `maxSteps` kept: the
/// steps that are multiples of the smallest power of two that fits, plus
/// the first and the last, every step with a val_loss and every step with
/// a null value (so evaluations and gaps are never thinned away). A power
/// of two keeps what was kept by a smaller one, so fsdp-run thins as it
/// goes with memory bounded; its page may then keep a few more steps than
/// fsdp-plot's of the same metrics file.
std::vector<MetricRecord> thinRecords(const std::vector<MetricRecord> &records,
                                      size_t maxSteps = kPlotMaxSteps);

/// The page for `records` (in step order, as mergeByStep returns them;
/// the charts thinned to kPlotMaxSteps, the summary over every record);
/// `title` names the run (plan or model, world size).
std::string renderRunPlot(const std::vector<MetricRecord> &records, const std::string &title);

/// Writes renderRunPlot's page to `path`, atomically: a browser reloading
/// it while a run refreshes it sees the old page or the new one.
Status writeRunPlot(const std::string &path, const std::vector<MetricRecord> &records,
                    const std::string &title);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_RUNPLOT_H
