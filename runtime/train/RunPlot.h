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

/// The page for `records` (in step order, as mergeByStep returns them);
/// `title` names the run (plan or model, world size).
std::string renderRunPlot(const std::vector<MetricRecord> &records, const std::string &title);

/// Writes renderRunPlot's page to `path`, atomically: a browser reloading
/// it while a run refreshes it sees the old page or the new one.
Status writeRunPlot(const std::string &path, const std::vector<MetricRecord> &records,
                    const std::string &title);

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_RUNPLOT_H
