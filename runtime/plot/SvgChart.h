//===- SvgChart.h - charts as inline SVG for self-contained pages ---------===//
//
// The project's pictures are HTML pages with inline SVG: no script, no
// stylesheet or font to fetch, so a page opens anywhere and can be
// attached to a bug report. The compiler's step trace
// (compiler/Analysis/StepTrace.cpp) and the training run's plot
// (runtime/train/RunPlot.h) draw with the helpers here: XML escaping,
// coordinates, "nice" tick steps, the byte unit that reads best, and a
// line chart over numeric x with labeled, ticked axes, a legend and gaps.
// No MLIR dependency: the compiler and the runtime both link it.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_PLOT_SVGCHART_H
#define FSDP_RUNTIME_PLOT_SVGCHART_H

#include <optional>
#include <string>
#include <vector>

namespace fsdp::svg {

/// `s` with &, <, > and " escaped, for text and attribute values.
std::string escapeXml(const std::string &s);
/// A coordinate with two decimals ("12.50").
std::string coord(double v);
/// A "nice" tick step (1, 2 or 5 x 10^k) giving about `ticks` ticks over
/// a range of `range`.
double tickStep(double range, int ticks);

/// The binary unit that reads best for values up to `maxBytes`: divide by
/// `scale` and append `name` (B, KiB, MiB, GiB, TiB).
struct ByteUnit {
  double scale = 1;
  const char *name = "B";
};
ByteUnit byteUnitFor(double maxBytes);

/// One line of a chart. y[i] belongs to x[i]; a missing value
/// (std::nullopt, or not finite) breaks the line there. Points on no
/// segment of two or more are drawn as dots, so a lone value shows.
struct Series {
  std::string label;
  std::string color;
  std::vector<double> x;
  std::vector<std::optional<double>> y;
  bool dashed = false;
  /// A dot on every point (sparse series such as evaluations).
  bool markers = false;
};

/// A line chart: every series over one x axis and one y axis.
struct LineChart {
  std::string title;
  std::string xLabel, yLabel;  // axis titles, units included ("memory (MiB)")
  std::vector<Series> series;
  double yDivisor = 1;         // values are divided by this before drawing
  bool yFromZero = false;      // the y axis starts at 0 (memory, throughput)
  bool xIntegers = false;      // x ticks on whole numbers only (steps)
  double width = 560, height = 300;
};

/// The chart as one <svg> element. Its parts carry classes a reader (or
/// a test) can find: "plot-area" (the rect data is drawn in), "axis x" and
/// "axis y" (lines), "tick" (tick labels), "axis-label", "legend", and per
/// series a <g class="series" data-label="..."> holding its polylines and
/// dots, every point inside the plot area.
std::string renderLineChart(const LineChart &chart);

} // namespace fsdp::svg

#endif // FSDP_RUNTIME_PLOT_SVGCHART_H
