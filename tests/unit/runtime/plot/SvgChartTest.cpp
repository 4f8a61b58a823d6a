//===- SvgChartTest.cpp - charts as inline SVG ----------------------------===//
//
// The helpers (escaping, tick steps, byte units) and the line chart: every
// point inside the plot area, one polyline per run of present values (a
// missing value breaks the line, a lone value is a dot), markers, the
// axes, tick labels that tell small steps apart, the legend, and a chart
// without values.
//
//===----------------------------------------------------------------------===//

#include "runtime/plot/SvgChart.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <regex>

namespace fsdp::svg {
namespace {

using fsdp::rt::formattest::countOf;

/// The numeric value of attribute `name` in `element`.
double attr(const std::string &element, const std::string &name) {
  std::smatch m;
  EXPECT_TRUE(std::regex_search(element, m, std::regex(" " + name + "=\"([-0-9.]+)\"")))
      << name << " in " << element;
  return std::stod(m[1]);
}

TEST(SvgChartTest, Helpers) {
  EXPECT_EQ(escapeXml("a<b>&\"c\""), "a&lt;b&gt;&amp;&quot;c&quot;");
  EXPECT_EQ(coord(12.5), "12.50");
  EXPECT_EQ(tickStep(10, 10), 1);
  EXPECT_EQ(tickStep(600, 8), 100);
  EXPECT_DOUBLE_EQ(tickStep(0.0009, 5), 0.0002);
  EXPECT_EQ(tickStep(0, 5), 1);
  EXPECT_STREQ(byteUnitFor(1000).name, "B");
  EXPECT_STREQ(byteUnitFor(1536).name, "KiB");
  EXPECT_EQ(byteUnitFor(3.0 * (1 << 20)).scale, 1 << 20);
  EXPECT_STREQ(byteUnitFor(5e12).name, "TiB");
}

TEST(SvgChartTest, PointsInsideThePlotAreaGapsBreakLines) {
  LineChart c;
  c.title = "loss <train>";
  c.xLabel = "step";
  c.yLabel = "loss";
  c.xIntegers = true;
  Series s;
  s.label = "loss";
  s.color = "#123456";
  // Steps 1-3, a gap at 4, 5-6, a gap at 7, a lone 8.
  for (int step = 1; step <= 8; ++step) {
    s.x.push_back(step);
    if (step == 4)
      s.y.push_back(std::nullopt);
    else if (step == 7)
      s.y.push_back(NAN);
    else
      s.y.push_back(10.0 / step);
  }
  c.series.push_back(s);
  std::string out = renderLineChart(c);
  EXPECT_EQ(out.rfind("<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\"", 0), 0u);
  EXPECT_NE(out.find("loss &lt;train&gt;"), std::string::npos);
  EXPECT_EQ(countOf(out, "<polyline"), 2);
  EXPECT_EQ(countOf(out, "class=\"dot\""), 1);
  std::smatch m;
  ASSERT_TRUE(std::regex_search(out, m, std::regex("<rect class=\"plot-area\"[^>]*>")));
  std::string area = m[0];
  double x0 = attr(area, "x"), y0 = attr(area, "y"), w = attr(area, "width"),
         h = attr(area, "height");
  int points = 0;
  const std::regex pointRe("(-?[0-9.]+),(-?[0-9.]+)"), listRe("points=\"([^\"]*)\"");
  for (std::sregex_iterator it(out.begin(), out.end(), listRe), end;
       it != end; ++it) {
    std::string list = (*it)[1];
    for (std::sregex_iterator p(list.begin(), list.end(), pointRe); p != end; ++p, ++points) {
      double x = std::stod((*p)[1]), y = std::stod((*p)[2]);
      EXPECT_GE(x, x0 - 1e-6);
      EXPECT_LE(x, x0 + w + 1e-6);
      EXPECT_GE(y, y0 - 1e-6);
      EXPECT_LE(y, y0 + h + 1e-6);
    }
  }
  EXPECT_EQ(points, 5); // 1-3 and 5-6; 8 is the dot
  // The first and last steps are the x axis' ends.
  EXPECT_NE(out.find("points=\"" + coord(x0) + ","), std::string::npos);
  EXPECT_NE(out.find("cx=\"" + coord(x0 + w) + "\""), std::string::npos);
  EXPECT_EQ(countOf(out, "class=\"axis x\""), 1);
  EXPECT_EQ(countOf(out, "class=\"axis y\""), 1);
  EXPECT_NE(out.find(">step</text>"), std::string::npos);
  EXPECT_NE(out.find("rotate(-90)\" text-anchor=\"middle\">loss</text>"), std::string::npos);
  EXPECT_NE(out.find("<g class=\"legend\">"), std::string::npos);
  // Integer steps: ticks 1..8, none at 1.5.
  EXPECT_NE(out.find(">8</text>"), std::string::npos);
  EXPECT_EQ(out.find(">1.5</text>"), std::string::npos);
  EXPECT_EQ(out.find("<script"), std::string::npos);
}

TEST(SvgChartTest, SmallTickStepsStayDistinct) {
  LineChart c;
  Series s;
  s.label = "lr";
  s.color = "#000";
  s.x = {1, 2, 3};
  s.y = {1e-3, 5e-4, 1e-4};
  c.series.push_back(s);
  std::string out = renderLineChart(c);
  EXPECT_NE(out.find(">0.0002</text>"), std::string::npos) << out;
  EXPECT_NE(out.find(">0.0010</text>"), std::string::npos) << out;
  // Tiny values read in exponent form.
  c.series[0].y = {3e-7, 2e-7, 1e-7};
  out = renderLineChart(c);
  EXPECT_NE(out.find(">2e-07</text>"), std::string::npos) << out;
}

TEST(SvgChartTest, DivisorFromZeroMarkersAndEmpty) {
  LineChart c;
  c.yDivisor = 1024;
  c.yFromZero = true;
  Series s;
  s.label = "bytes";
  s.color = "#000";
  s.markers = true;
  s.x = {1, 2};
  s.y = {2048, 4096};
  c.series.push_back(s);
  std::string out = renderLineChart(c);
  EXPECT_NE(out.find(">0</text>"), std::string::npos);
  EXPECT_NE(out.find(">4</text>"), std::string::npos);
  EXPECT_EQ(countOf(out, "class=\"marker\""), 2);
  c.series[0].y = {std::nullopt, std::nullopt};
  out = renderLineChart(c);
  EXPECT_NE(out.find(">no values</text>"), std::string::npos);
  EXPECT_EQ(countOf(out, "<polyline"), 0);
}

} // namespace
} // namespace fsdp::svg
