//===- SvgChart.cpp - charts as inline SVG for self-contained pages -------===//
//
// A line chart's axes run from tick to tick: the value range is widened
// to whole tick steps, so every point lies inside the plot area and the
// extremes sit on labeled ticks. Numbers on ticks get as many decimals as
// the tick step needs, so 0.0002 and 0.0004 do not both print as 0.
//
//===----------------------------------------------------------------------===//

#include "runtime/plot/SvgChart.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

namespace fsdp::svg {

std::string escapeXml(const std::string &s) {
  std::string out;
  for (char c : s)
    switch (c) {
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '&': out += "&amp;"; break;
    case '"': out += "&quot;"; break;
    default: out += c;
    }
  return out;
}

std::string coord(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

double tickStep(double range, int ticks) {
  if (!(range > 0))
    return 1;
  double raw = range / ticks, power = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * power >= raw)
      return m * power;
  return 10 * power;
}

ByteUnit byteUnitFor(double maxBytes) {
  static const char *names[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  ByteUnit unit;
  for (int i = 0; maxBytes / unit.scale >= 1024 && i < 4; ++i) {
    unit.scale *= 1024;
    unit.name = names[i + 1];
  }
  return unit;
}

namespace {

/// More ticks than any axis asks for (about 8): a bound, not a layout.
constexpr int kMaxTicks = 20;

/// A tick's label: the decimals the step needs, or 3 significant digits
/// in exponent form where fixed notation would be unreadable.
std::string tickLabel(double value, double step) {
  char buf[40];
  if (std::fabs(value) < step * 1e-6)
    value = 0; // -0.00 and 1e-17 from accumulated steps
  double magnitude = std::max(std::fabs(value), step);
  if (step < 1e-4 || magnitude >= 1e7) {
    std::snprintf(buf, sizeof buf, "%.3g", value);
  } else {
    int decimals = std::max(0, static_cast<int>(std::ceil(-std::log10(step) - 1e-9)));
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
  }
  return buf;
}

/// [lo, hi] widened to whole steps of a nice tick step.
struct Axis {
  double lo = 0, hi = 1, step = 1;
};

Axis niceAxis(double lo, double hi, int ticks) {
  if (hi <= lo) { // one value: a range around it
    double pad = lo != 0 ? std::fabs(lo) * 0.1 : 1;
    lo -= pad;
    hi += pad;
  }
  Axis a;
  a.step = tickStep(hi - lo, ticks);
  a.lo = std::floor(lo / a.step + 1e-9) * a.step;
  a.hi = std::ceil(hi / a.step - 1e-9) * a.step;
  if (a.hi <= a.lo)
    a.hi = a.lo + a.step;
  return a;
}

bool present(const std::optional<double> &v) { return v && std::isfinite(*v); }

} // namespace

std::string renderLineChart(const LineChart &c) {
  const double left = 76, right = 20, top = 48, bottom = 46;
  const double plotW = c.width - left - right, plotH = c.height - top - bottom;
  // The data range over every series.
  double xLo = INFINITY, xHi = -INFINITY, yLo = INFINITY, yHi = -INFINITY;
  bool any = false;
  for (const Series &s : c.series)
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      xLo = std::min(xLo, s.x[i]);
      xHi = std::max(xHi, s.x[i]);
      if (!present(s.y[i]))
        continue;
      any = true;
      yLo = std::min(yLo, *s.y[i] / c.yDivisor);
      yHi = std::max(yHi, *s.y[i] / c.yDivisor);
    }
  if (!(xLo <= xHi))
    xLo = 0, xHi = 1;
  if (!any)
    yLo = 0, yHi = 1;
  if (c.yFromZero)
    yLo = std::min(yLo, 0.0);
  Axis xa = niceAxis(xLo, xHi, 8), ya = niceAxis(yLo, yHi, 5);
  if (xHi > xLo)
    xa.lo = xLo, xa.hi = xHi; // the run's own first and last step bound the x axis
  auto px = [&](double x) { return left + (x - xa.lo) / (xa.hi - xa.lo) * plotW; };
  auto py = [&](double y) { return top + plotH - (y - ya.lo) / (ya.hi - ya.lo) * plotH; };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" width=\"" << c.width
      << "\" height=\"" << c.height << "\" viewBox=\"0 0 " << c.width << " " << c.height
      << "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  svg << "<title>" << escapeXml(c.title) << "</title>\n";
  svg << "<text class=\"chart-title\" x=\"" << left << "\" y=\"16\" font-weight=\"bold\" "
      << "font-size=\"13\">" << escapeXml(c.title) << "</text>\n";
  svg << "<rect class=\"plot-area\" x=\"" << coord(left) << "\" y=\"" << coord(top)
      << "\" width=\"" << coord(plotW) << "\" height=\"" << coord(plotH)
      << "\" fill=\"#fafafa\" stroke=\"none\"/>\n";
  // Grid, ticks and their labels.
  // Ticks by index, not by repeated addition: a step below the values'
  // resolution would never advance t.
  for (int k = 0; k <= kMaxTicks && ya.lo + k * ya.step <= ya.hi + ya.step * 1e-6; ++k) {
    double t = ya.lo + k * ya.step, y = py(t);
    svg << "<line x1=\"" << coord(left - 4) << "\" y1=\"" << coord(y) << "\" x2=\""
        << coord(left + plotW) << "\" y2=\"" << coord(y)
        << "\" stroke=\"#ddd\" stroke-width=\"0.5\"/>\n";
    svg << "<text class=\"tick y\" x=\"" << coord(left - 7) << "\" y=\"" << coord(y + 4)
        << "\" text-anchor=\"end\">" << tickLabel(t, ya.step) << "</text>\n";
  }
  double xStep = c.xIntegers ? std::max(xa.step, 1.0) : xa.step;
  const double xFirst = std::ceil(xa.lo / xStep - 1e-9) * xStep;
  for (int k = 0; k <= kMaxTicks && xFirst + k * xStep <= xa.hi + xStep * 1e-6; ++k) {
    double t = xFirst + k * xStep, x = px(t);
    svg << "<line x1=\"" << coord(x) << "\" y1=\"" << coord(top) << "\" x2=\"" << coord(x)
        << "\" y2=\"" << coord(top + plotH + 4) << "\" stroke=\"#ddd\" stroke-width=\"0.5\"/>\n";
    svg << "<text class=\"tick x\" x=\"" << coord(x) << "\" y=\"" << coord(top + plotH + 16)
        << "\" text-anchor=\"middle\">" << tickLabel(t, xStep) << "</text>\n";
  }
  svg << "<line class=\"axis x\" x1=\"" << coord(left) << "\" y1=\"" << coord(top + plotH)
      << "\" x2=\"" << coord(left + plotW) << "\" y2=\"" << coord(top + plotH)
      << "\" stroke=\"#000\"/>\n";
  svg << "<line class=\"axis y\" x1=\"" << coord(left) << "\" y1=\"" << coord(top) << "\" x2=\""
      << coord(left) << "\" y2=\"" << coord(top + plotH) << "\" stroke=\"#000\"/>\n";
  svg << "<text class=\"axis-label x\" x=\"" << coord(left + plotW / 2) << "\" y=\""
      << coord(c.height - 8) << "\" text-anchor=\"middle\">" << escapeXml(c.xLabel)
      << "</text>\n";
  svg << "<text class=\"axis-label y\" transform=\"translate(14," << coord(top + plotH / 2)
      << ") rotate(-90)\" text-anchor=\"middle\">" << escapeXml(c.yLabel) << "</text>\n";
  if (!any)
    svg << "<text x=\"" << coord(left + plotW / 2) << "\" y=\"" << coord(top + plotH / 2)
        << "\" text-anchor=\"middle\" fill=\"#888\">no values</text>\n";

  // The series: one polyline per run of present values.
  for (const Series &s : c.series) {
    svg << "<g class=\"series\" data-label=\"" << escapeXml(s.label) << "\" stroke=\""
        << escapeXml(s.color) << "\" fill=\"" << escapeXml(s.color) << "\">\n";
    std::vector<std::pair<double, double>> run;
    auto flush = [&] {
      if (run.size() == 1) {
        svg << "<circle class=\"dot\" cx=\"" << coord(run[0].first) << "\" cy=\""
            << coord(run[0].second) << "\" r=\"2.5\" stroke=\"none\"/>\n";
      } else if (run.size() > 1) {
        svg << "<polyline fill=\"none\" stroke-width=\"1.5\""
            << (s.dashed ? " stroke-dasharray=\"5 3\"" : "") << " points=\"";
        for (size_t i = 0; i < run.size(); ++i)
          svg << (i ? " " : "") << coord(run[i].first) << "," << coord(run[i].second);
        svg << "\"/>\n";
      }
      run.clear();
    };
    for (size_t i = 0; i < s.x.size() && i < s.y.size(); ++i) {
      if (!present(s.y[i])) {
        flush();
        continue;
      }
      double x = px(s.x[i]), y = py(*s.y[i] / c.yDivisor);
      run.emplace_back(x, y);
      if (s.markers)
        svg << "<circle class=\"marker\" cx=\"" << coord(x) << "\" cy=\"" << coord(y)
            << "\" r=\"2.5\" stroke=\"none\"/>\n";
    }
    flush();
    svg << "</g>\n";
  }

  // The legend, one entry per series, above the plot area.
  double lx = left;
  for (const Series &s : c.series) {
    svg << "<g class=\"legend\"><line x1=\"" << coord(lx) << "\" y1=\"32\" x2=\""
        << coord(lx + 18) << "\" y2=\"32\" stroke=\"" << escapeXml(s.color)
        << "\" stroke-width=\"2\"" << (s.dashed ? " stroke-dasharray=\"5 3\"" : "")
        << "/><text x=\"" << coord(lx + 22) << "\" y=\"36\">" << escapeXml(s.label)
        << "</text></g>\n";
    lx += 40 + 6.5 * s.label.size();
  }
  svg << "</svg>\n";
  return svg.str();
}

} // namespace fsdp::svg
