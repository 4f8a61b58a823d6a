//===- MetricsReaderTest.cpp - reading --metrics files back ---------------===//
//
// Every line TrainLog writes parses back to the values it holds (the
// round trip fsdp-run --plot relies on), the value kinds of the format
// (numbers, booleans, null, strings), the refusals (not an object, nested
// values, bad numbers, no step), files (line numbers in errors, blank
// lines, an empty or missing file) and the merge of a resumed run's files
// by step.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/MetricsReader.h"
#include "runtime/train/TrainLog.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace fsdp::rt {
namespace {

using formattest::writeBytes;

TEST(MetricsReaderTest, ReadsBackWhatTrainLogWrites) {
  StepRecord r;
  r.step = 7;
  r.loss = 3.25f;
  r.lr = 1.5e-4;
  r.stepSeconds = 0.25;
  r.samples = 8;
  r.tokens = 512;
  r.peakBytes = 123456789;
  r.hostBytes = 4096;
  r.checkpointSeconds = 0.5;
  r.checkpointBytes = 77;
  MetricRecord m;
  ASSERT_TRUE(parseMetricsLine(metricsLine(r), m).isOk()) << metricsLine(r);
  EXPECT_EQ(m.step, 7);
  EXPECT_EQ(*m.number("loss"), 3.25);
  EXPECT_EQ(*m.number("lr"), 1.5e-4);
  EXPECT_EQ(*m.number("tokens_per_s"), 2048);
  EXPECT_EQ(*m.number("samples_per_s"), 32);
  EXPECT_EQ(*m.number("peak_bytes"), 123456789);
  EXPECT_EQ(*m.number("host_bytes"), 4096);
  EXPECT_EQ(*m.number("checkpoint_bytes"), 77);
  EXPECT_FALSE(m.has("grad_norm"));
  // A non-finite loss is null: present, but no number.
  r.loss = std::numeric_limits<double>::quiet_NaN();
  ASSERT_TRUE(parseMetricsLine(metricsLine(r), m).isOk());
  EXPECT_TRUE(m.has("loss"));
  EXPECT_FALSE(m.number("loss"));
}

TEST(MetricsReaderTest, ValueKinds) {
  MetricRecord m;
  ASSERT_TRUE(parseMetricsLine(R"({"step": 3, "skipped": true, "ok": false, "val_loss": null,)"
                               R"( "note": "a \"b\"\u00e9", "x": -1.5e-3, "y": 0, "z": 2E+2})",
                               m)
                  .isOk());
  EXPECT_EQ(m.step, 3);
  EXPECT_EQ(*m.number("skipped"), 1);
  EXPECT_EQ(*m.number("ok"), 0);
  EXPECT_EQ(m.values.at("val_loss").kind, MetricValue::Kind::Null);
  EXPECT_EQ(m.values.at("note").text, "a \"b\"\xc3\xa9");
  EXPECT_FALSE(m.number("note"));
  EXPECT_EQ(*m.number("x"), -1.5e-3);
  EXPECT_EQ(*m.number("y"), 0);
  EXPECT_EQ(*m.number("z"), 200);
}

TEST(MetricsReaderTest, Refusals) {
  struct Case {
    const char *line, *error;
  } cases[] = {
      {"[1, 2]", "not a JSON object"},
      {"step 1", "not a JSON object"},
      {R"({"step": 1, "a": {"b": 1}})", "'a': nested values are not metrics"},
      {R"({"step": 1, "a": [1]})", "'a': nested values are not metrics"},
      {R"({"step": 1, "loss": NaN})", "'loss': malformed JSON at byte 20: expected a number"},
      {R"({"step": 1, "loss": 01})", "leading zero"},
      {R"({"step": 1, "loss": 1.})", "expected digits after '.'"},
      {R"({"step": 1, "loss": 1e})", "expected digits in the exponent"},
      {R"({"step": 1, "loss": 2,})", "malformed JSON"},
      {R"({"step": 1, "step": 2})", "duplicate key 'step'"},
      {R"({"step": 1} x)", "trailing characters after the object"},
      {R"({"step": 1, "loss": 2)", "expected '}'"},
      {R"({"loss": 2})", "no \"step\""},
      {R"({"step": 0})", "\"step\" is not an integer >= 1"},
      {R"({"step": 1.5})", "\"step\" is not an integer >= 1"},
      {R"({"step": true})", "\"step\" is not an integer >= 1"},
      {R"({"step": "1"})", "\"step\" is not an integer >= 1"},
  };
  for (const Case &c : cases) {
    MetricRecord m;
    Status s = parseMetricsLine(c.line, m);
    ASSERT_FALSE(s.isOk()) << c.line;
    EXPECT_NE(s.message().find(c.error), std::string::npos) << c.line << ": " << s.message();
  }
}

class MetricsFileReadTest : public formattest::FormatTest {
protected:
  MetricsFileReadTest() : FormatTest("fsdp-metrics-read-", "metrics.jsonl") {}
};

TEST_F(MetricsFileReadTest, LinesInOrderBlankLinesSkipped) {
  writeBytes(path, "{\"step\": 1, \"loss\": 2}\n\n{\"step\": 2, \"loss\": 1}\n");
  std::vector<MetricRecord> records;
  ASSERT_TRUE(readMetricsFile(path, records).isOk());
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].step, 2);
  EXPECT_EQ(*records[1].number("loss"), 1);
}

TEST_F(MetricsFileReadTest, ErrorsNameFileAndLine) {
  writeBytes(path, "{\"step\": 1}\n\n{\"step\": 2, \"loss\": }\n");
  std::vector<MetricRecord> records;
  Status s = readMetricsFile(path, records);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("metrics file '" + path + "' line 3: 'loss': malformed JSON"),
            std::string::npos)
      << s.message();
  // A line cut short (a crash while writing it).
  writeBytes(path, "{\"step\": 1}\n{\"step\": 2, \"lo");
  s = readMetricsFile(path, records);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("line 2: malformed JSON"), std::string::npos) << s.message();
}

TEST_F(MetricsFileReadTest, EmptyAndMissingFiles) {
  writeBytes(path, "\n");
  std::vector<MetricRecord> records;
  Status s = readMetricsFile(path, records);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("holds no step"), std::string::npos) << s.message();
  s = readMetricsFile(dir + "/absent.jsonl", records);
  ASSERT_FALSE(s.isOk());
  EXPECT_NE(s.message().find("absent.jsonl': cannot open: No such file"), std::string::npos)
      << s.message();
}

TEST(MetricsReaderTest, MergeByStepLaterFileWins) {
  auto rec = [](int64_t step, double loss) {
    MetricRecord r;
    EXPECT_TRUE(parseMetricsLine("{\"step\": " + std::to_string(step) +
                                     ", \"loss\": " + std::to_string(loss) + "}",
                                 r)
                    .isOk());
    return r;
  };
  // A run that reached step 4 and was resumed from its step-2 checkpoint.
  std::vector<MetricRecord> merged =
      mergeByStep({{rec(1, 9), rec(2, 8), rec(3, 7), rec(4, 6)}, {rec(3, 5), rec(4, 4), rec(5, 3)}});
  ASSERT_EQ(merged.size(), 5u);
  for (int i = 0; i < 5; ++i)
    EXPECT_EQ(merged[i].step, i + 1);
  EXPECT_EQ(*merged[1].number("loss"), 8);
  EXPECT_EQ(*merged[2].number("loss"), 5);
  EXPECT_EQ(*merged[4].number("loss"), 3);
}

} // namespace
} // namespace fsdp::rt
