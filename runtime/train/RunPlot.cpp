//===- RunPlot.cpp - a training run's metrics as a page of charts ---------===//
//
// The charts are a table (kCharts): each names its keys, how they are
// labeled and which flag logs them, so a key another part of the run
// starts logging needs one row here. The summary above the charts is the
// numbers a reader looks for first: the step range, the last loss, the
// best val_loss, the median throughput and the highest memory.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/RunPlot.h"

#include "runtime/io/AtomicFile.h"
#include "runtime/io/FileIO.h"
#include "runtime/plot/SvgChart.h"
#include "runtime/support/ByteSize.h"
#include "runtime/train/TrainLog.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fsdp::rt {
namespace {

struct SeriesSpec {
  const char *key, *label, *color;
  bool dashed, markers;
};

struct ChartSpec {
  const char *title, *yLabel;
  std::vector<SeriesSpec> series;
  bool bytes, fromZero;
  const char *loggedBy; // the flag that logs it, for the page's note
};

const std::vector<ChartSpec> &charts() {
  static const std::vector<ChartSpec> kCharts = {
      {"loss", "loss",
       {{"loss", "train loss", "#1f77b4", false, false},
        {"val_loss", "val_loss", "#ff7f0e", false, true}},
       false, false, nullptr},
      {"learning rate", "learning rate", {{"lr", "lr", "#2ca02c", false, false}}, false, true,
       nullptr},
      {"gradient norm", "gradient norm (all parameters)",
       {{"grad_norm", "grad_norm", "#9467bd", false, false}}, false, true,
       "fsdp-opt --clip-grad-norm=MAX or --log-grad-norm"},
      {"throughput", "tokens/s", {{"tokens_per_s", "tokens/s", "#17becf", false, false}}, false,
       true, nullptr},
      {"throughput", "samples/s", {{"samples_per_s", "samples/s", "#17becf", false, false}},
       false, true, nullptr},
      {"memory per rank", "bytes",
       {{"peak_bytes", "peak_bytes (plan)", "#d62728", false, false},
        {"host_bytes", "host_bytes (offloaded)", "#8c564b", true, false},
        {"device_context_bytes", "device_context_bytes", "#7f7f7f", true, false}},
       true, true, nullptr},
      {"loss scale", "loss scale", {{"loss_scale", "loss_scale", "#bcbd22", false, false}}, false,
       false, "fsdp-opt --param-dtype=f16"},
  };
  return kCharts;
}

bool anyValue(const std::vector<MetricRecord> &records, const char *key) {
  for (const MetricRecord &r : records)
    if (auto v = r.number(key); v && std::isfinite(*v))
      return true;
  return false;
}

/// A key's series: a point for each record that has the key, a gap
/// (std::nullopt) where its value is null or not a number.
svg::Series seriesOf(const std::vector<MetricRecord> &records, const SeriesSpec &spec) {
  svg::Series s;
  s.label = spec.label;
  s.color = spec.color;
  s.dashed = spec.dashed;
  s.markers = spec.markers;
  for (const MetricRecord &r : records) {
    if (!r.has(spec.key))
      continue;
    s.x.push_back(static_cast<double>(r.step));
    s.y.push_back(r.number(spec.key));
  }
  return s;
}

/// The summary line's numbers.
std::string summary(const std::vector<MetricRecord> &records) {
  std::ostringstream os;
  os << "steps " << records.front().step << "&#8211;" << records.back().step << " ("
     << records.size() << " logged)";
  for (auto it = records.rbegin(); it != records.rend(); ++it)
    if (auto loss = it->number("loss"); loss && std::isfinite(*loss)) {
      os << "; last loss " << formatNumber("%.6g", *loss) << " (step " << it->step << ")";
      break;
    }
  const MetricRecord *best = nullptr;
  for (const MetricRecord &r : records)
    if (auto v = r.number("val_loss"); v && std::isfinite(*v) && (!best || *v < *best->number("val_loss")))
      best = &r;
  if (best)
    os << "; best val_loss " << formatNumber("%.6g", *best->number("val_loss")) << " (step "
       << best->step << ")";
  for (const char *key : {"tokens_per_s", "samples_per_s"}) {
    std::vector<double> rates;
    for (const MetricRecord &r : records)
      if (auto v = r.number(key); v && std::isfinite(*v))
        rates.push_back(*v);
    if (rates.empty())
      continue;
    std::nth_element(rates.begin(), rates.begin() + rates.size() / 2, rates.end());
    os << "; median " << formatNumber("%.6g", rates[rates.size() / 2])
       << (key[0] == 't' ? " tokens/s" : " samples/s");
    break;
  }
  double peak = 0;
  for (const MetricRecord &r : records)
    peak = std::max(peak, r.number("peak_bytes").value_or(0));
  if (peak > 0)
    os << "; peak memory " << formatBytes(static_cast<uint64_t>(peak)) << " per rank";
  int64_t skipped = 0;
  for (const MetricRecord &r : records)
    skipped += r.number("skipped").value_or(0) != 0;
  if (anyValue(records, "skipped"))
    os << "; " << skipped << " step" << (skipped == 1 ? "" : "s")
       << " skipped (inf/nan gradients)";
  return os.str();
}

/// Whether thinning keeps `r` whatever its step.
bool alwaysKept(const MetricRecord &r) {
  if (r.has("val_loss"))
    return true;
  for (const auto &[key, value] : r.values)
    if (value.kind == MetricValue::Kind::Null)
      return true;
  return false;
}

} // namespace

std::vector<MetricRecord> thinRecords(const std::vector<MetricRecord> &records,
                                      size_t maxSteps) {
  if (records.size() <= maxSteps)
    return records;
  auto keep = [&](size_t i, int64_t stride) {
    return i == 0 || i + 1 == records.size() || records[i].step % stride == 0 ||
           alwaysKept(records[i]);
  };
  int64_t stride = 1;
  for (;; stride *= 2) {
    size_t kept = 0;
    for (size_t i = 0; i < records.size(); ++i)
      kept += keep(i, stride) && !alwaysKept(records[i]);
    if (kept <= maxSteps || stride > (int64_t{1} << 40))
      break;
  }
  std::vector<MetricRecord> out;
  for (size_t i = 0; i < records.size(); ++i)
    if (keep(i, stride))
      out.push_back(records[i]);
  return out;
}

std::string renderRunPlot(const std::vector<MetricRecord> &allRecords, const std::string &title) {
  const std::vector<MetricRecord> records = thinRecords(allRecords);
  std::ostringstream body, missing;
  bool throughputDrawn = false;
  for (const ChartSpec &spec : charts()) {
    bool present = false;
    for (const SeriesSpec &s : spec.series)
      present = present || anyValue(records, s.key);
    if (!present) {
      if (spec.loggedBy)
        missing << (missing.tellp() ? "; " : "") << svg::escapeXml(spec.series[0].key)
                << " (" << svg::escapeXml(spec.loggedBy) << ")";
      continue;
    }
    // Token runs log samples/s too: one throughput chart, tokens first.
    if (std::string(spec.title) == "throughput") {
      if (throughputDrawn)
        continue;
      throughputDrawn = true;
    }
    svg::LineChart chart;
    chart.title = spec.title;
    chart.xLabel = "step";
    chart.yLabel = spec.yLabel;
    chart.yFromZero = spec.fromZero;
    chart.xIntegers = true;
    for (const SeriesSpec &s : spec.series)
      if (anyValue(records, s.key))
        chart.series.push_back(seriesOf(records, s));
    if (spec.bytes) {
      double maxBytes = 0;
      for (const svg::Series &s : chart.series)
        for (const auto &y : s.y)
          if (y && std::isfinite(*y))
            maxBytes = std::max(maxBytes, *y);
      svg::ByteUnit unit = svg::byteUnitFor(maxBytes);
      chart.yDivisor = unit.scale;
      chart.yLabel = std::string(spec.yLabel) + " (" + unit.name + ")";
    }
    body << "<div style=\"display:inline-block; margin:0 12px 12px 0\">\n"
         << svg::renderLineChart(chart) << "</div>\n";
  }

  std::ostringstream html;
  const std::string name = svg::escapeXml(title);
  html << "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"/><title>training run: " << name
       << "</title></head>\n<body style=\"font-family: sans-serif\">\n<h2>training run: " << name
       << "</h2>\n";
  if (records.empty()) {
    html << "<p>No steps logged yet.</p>\n</body></html>\n";
    return html.str();
  }
  html << "<p>" << summary(allRecords) << ".</p>\n" << body.str();
  if (missing.tellp())
    html << "<p style=\"color:#666\">Not in these metrics: " << missing.str() << ".</p>\n";
  html << "</body></html>\n";
  return html.str();
}

Status writeRunPlot(const std::string &path, const std::vector<MetricRecord> &records,
                    const std::string &title) {
  std::string page = renderRunPlot(records, title);
  return detail::withContext("plot file '" + path + "'",
                     writeFileAtomic(path, {ByteSpan{page.data(), page.size()}}));
}

} // namespace fsdp::rt
