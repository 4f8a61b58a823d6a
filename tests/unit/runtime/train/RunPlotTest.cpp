//===- RunPlotTest.cpp - a training run's metrics as a page of charts -----===//
//
// The page for the keys a run logs: one chart per quantity present (loss
// with val_loss, lr, grad_norm, throughput, memory, loss_scale), none and
// a note naming the flag for one absent, val_loss points only on its
// steps, a null loss breaking the line, bytes in a binary unit, the
// summary, the title escaped, no script; writeRunPlot's file and its
// error.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/RunPlot.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

namespace fsdp::rt {
namespace {

using formattest::countOf;

std::vector<MetricRecord> parse(const std::vector<std::string> &lines) {
  std::vector<MetricRecord> records;
  for (const std::string &line : lines) {
    MetricRecord r;
    EXPECT_TRUE(parseMetricsLine(line, r).isOk()) << line;
    records.push_back(r);
  }
  return records;
}

/// The <svg> of the chart titled `title`.
std::string chart(const std::string &page, const std::string &title) {
  size_t at = page.find("<title>" + title + "</title>");
  if (at == std::string::npos)
    return "";
  size_t begin = page.rfind("<svg", at), end = page.find("</svg>", at);
  return page.substr(begin, end - begin);
}

TEST(RunPlotTest, TrainLogKeysOnly) {
  auto records = parse({
      R"({"step": 1, "loss": 5.5, "lr": 0.001, "samples_per_s": 10, "tokens_per_s": 640, "step_time_s": 0.8, "peak_bytes": 3145728})",
      R"({"step": 2, "loss": 5.0, "lr": 0.001, "samples_per_s": 12, "tokens_per_s": 768, "step_time_s": 0.7, "peak_bytes": 3145728})",
      R"({"step": 3, "loss": 4.5, "lr": 0.0005, "samples_per_s": 12, "tokens_per_s": 768, "step_time_s": 0.7, "peak_bytes": 3145728})",
  });
  std::string page = renderRunPlot(records, "gpt-tiny.onnx, world size 2 <&>");
  EXPECT_NE(page.find("<h2>training run: gpt-tiny.onnx, world size 2 &lt;&amp;&gt;</h2>"),
            std::string::npos);
  EXPECT_EQ(countOf(page, "<svg"), 4); // loss, lr, throughput, memory
  EXPECT_NE(chart(page, "loss"), "");
  EXPECT_NE(chart(page, "learning rate"), "");
  EXPECT_NE(chart(page, "throughput").find(">tokens/s</text>"), std::string::npos);
  EXPECT_NE(chart(page, "memory per rank").find("bytes (MiB)"), std::string::npos);
  EXPECT_EQ(chart(page, "gradient norm"), "");
  EXPECT_EQ(chart(page, "loss scale"), "");
  EXPECT_NE(page.find("Not in these metrics: grad_norm (fsdp-opt --clip-grad-norm=MAX or "
                      "--log-grad-norm); loss_scale (fsdp-opt --param-dtype=f16)."),
            std::string::npos);
  EXPECT_NE(page.find("steps 1&#8211;3 (3 logged); last loss 4.5 (step 3); median 768 "
                      "tokens/s; peak memory 3.0 MiB per rank."),
            std::string::npos)
      << page;
  EXPECT_EQ(page.find("<script"), std::string::npos);
  EXPECT_EQ(page.find("href"), std::string::npos);
}

TEST(RunPlotTest, KeysOfTheOtherFeaturesWhenPresent) {
  auto records = parse({
      R"({"step": 1, "loss": 5.5, "lr": 0.001, "samples_per_s": 10, "peak_bytes": 100, "host_bytes": 50, "grad_norm": 2.5, "loss_scale": 65536, "skipped": false})",
      R"({"step": 2, "loss": null, "lr": 0.001, "samples_per_s": 10, "peak_bytes": 100, "host_bytes": 50, "grad_norm": 2.0, "loss_scale": 32768, "skipped": true})",
      R"({"step": 3, "loss": 4.5, "lr": 0.001, "samples_per_s": 10, "peak_bytes": 100, "host_bytes": 50, "grad_norm": 1.5, "loss_scale": 32768, "skipped": false, "val_loss": 4.9})",
      R"({"step": 4, "loss": 4.0, "lr": 0.001, "samples_per_s": 10, "peak_bytes": 100, "host_bytes": 50, "grad_norm": 1.0, "loss_scale": 32768, "skipped": false})",
      R"({"step": 5, "loss": 3.5, "lr": 0.001, "samples_per_s": 10, "peak_bytes": 100, "host_bytes": 50, "grad_norm": 1.0, "loss_scale": 32768, "skipped": false})",
      R"({"step": 6, "loss": 3.0, "lr": 0.001, "samples_per_s": 10, "peak_bytes": 100, "host_bytes": 50, "grad_norm": 1.0, "loss_scale": 32768, "skipped": false, "val_loss": 4.1})",
  });
  std::string page = renderRunPlot(records, "run");
  EXPECT_EQ(countOf(page, "<svg"), 6);
  std::string loss = chart(page, "loss");
  // train loss: step 1 alone (a dot; step 2 is null), steps 3-6 a line;
  // val_loss: its two steps joined, with markers.
  size_t val = loss.find("data-label=\"val_loss\"");
  ASSERT_NE(val, std::string::npos);
  std::string train = loss.substr(0, val), valPart = loss.substr(val);
  EXPECT_EQ(countOf(train, "class=\"dot\""), 1);
  EXPECT_EQ(countOf(train, "<polyline"), 1);
  EXPECT_EQ(countOf(valPart.substr(0, valPart.find("</g>")), "class=\"marker\""), 2);
  EXPECT_NE(chart(page, "throughput").find(">samples/s</text>"), std::string::npos);
  EXPECT_NE(chart(page, "memory per rank").find("host_bytes (offloaded)"), std::string::npos);
  EXPECT_NE(chart(page, "memory per rank").find("bytes (B)"), std::string::npos);
  EXPECT_NE(chart(page, "gradient norm"), "");
  EXPECT_NE(chart(page, "loss scale"), "");
  EXPECT_EQ(page.find("Not in these metrics"), std::string::npos);
  EXPECT_NE(page.find("best val_loss 4.1 (step 6)"), std::string::npos);
  EXPECT_NE(page.find("1 step skipped"), std::string::npos);
}

TEST(RunPlotTest, LongRunsAreThinnedKeepingEvaluationsAndGaps) {
  std::vector<std::string> lines;
  for (int step = 1; step <= 10001; ++step)
    lines.push_back("{\"step\": " + std::to_string(step) + ", \"loss\": " +
                    (step == 4321 ? std::string("null") : std::to_string(10.0 / step)) +
                    (step % 100 == 0 ? ", \"val_loss\": 1" : "") + "}");
  auto records = parse(lines);
  auto thin = thinRecords(records);
  // Stride 8 (10001 / 4 > 2000): 1250 multiples, plus step 1, step 10001,
  // the val_loss steps (multiples of 100 that are not of 8: 50) and the null.
  ASSERT_EQ(thin.size(), 1250u + 2 + 50 + 1);
  EXPECT_EQ(thin.front().step, 1);
  EXPECT_EQ(thin.back().step, 10001);
  int vals = 0;
  bool null = false;
  for (const MetricRecord &r : thin) {
    vals += r.has("val_loss");
    null = null || r.step == 4321;
    EXPECT_TRUE(r.step % 8 == 0 || r.step % 100 == 0 || r.step == 1 || r.step == 4321 ||
                r.step == 10001)
        << r.step;
  }
  EXPECT_EQ(vals, 100);
  EXPECT_TRUE(null);
  // Thinning again keeps them all; short runs are not thinned.
  EXPECT_EQ(thinRecords(thin).size(), thin.size());
  EXPECT_EQ(thinRecords(parse({lines[0], lines[1]})).size(), 2u);
  // The page draws the thinned steps: one loss point each but the null.
  std::string page = renderRunPlot(records, "long");
  std::string loss = chart(page, "loss");
  size_t begin = loss.find("data-label=\"train loss\"");
  std::string train = loss.substr(begin, loss.find("</g>", begin) - begin);
  int points = countOf(train, "class=\"dot\"");
  for (size_t at = train.find("points=\""); at != std::string::npos;
       at = train.find("points=\"", at + 1))
    points += countOf(train.substr(at, train.find('"', at + 8) - at), " ") + 1;
  EXPECT_EQ(points, int(thin.size()) - 1);
}

TEST(RunPlotTest, NoStepsYet) {
  std::string page = renderRunPlot({}, "run");
  EXPECT_NE(page.find("No steps logged yet."), std::string::npos);
  EXPECT_EQ(countOf(page, "<svg"), 0);
}

class RunPlotFileTest : public formattest::FormatTest {
protected:
  RunPlotFileTest() : FormatTest("fsdp-run-plot-", "run.html") {}
};

TEST_F(RunPlotFileTest, WritesThePage) {
  auto records = parse({R"({"step": 1, "loss": 2, "lr": 0.1})"});
  ASSERT_TRUE(writeRunPlot(path, records, "t").isOk());
  EXPECT_EQ(formattest::readBytes(path), renderRunPlot(records, "t"));
  Status s = writeRunPlot(dir + "/no/such/dir/run.html", records, "t");
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("plot file '" + dir + "/no/such/dir/run.html'"), std::string::npos)
      << s.message();
}

} // namespace
} // namespace fsdp::rt
