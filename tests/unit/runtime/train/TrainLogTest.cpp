//===- TrainLogTest.cpp - what a training run reports per step ------------===//
//
// The --metrics line (exact text, keys, checkpoint fields, a loss that
// parses back to the same f32 bits for values across the float range, null
// for a non-finite loss), the console line, byte formatting, the logging
// cadence, and a metrics file that holds each line as soon as it is
// written.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TrainLog.h"

#include "tests/unit/runtime/FormatTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace fsdp::rt {
namespace {

StepRecord record() {
  StepRecord r;
  r.step = 5;
  r.totalSteps = 100;
  r.loss = 4.1234565f;
  r.lr = 1e-3;
  r.stepSeconds = 0.5;
  r.samples = 8;
  r.tokens = 512;
  r.peakBytes = 12897484;
  return r;
}

/// The text after `"key": ` up to the next ',' or '}'.
std::string field(const std::string &line, const std::string &key) {
  size_t at = line.find("\"" + key + "\": ");
  if (at == std::string::npos)
    return "";
  at += key.size() + 4;
  return line.substr(at, line.find_first_of(",}", at) - at);
}

/// fp16 loss scaling's fields appear only when set: loss_scale as a number,
/// skipped as a JSON boolean; the console line names the scale and a skip.
TEST(TrainLogTest, LossScaleFields) {
  EXPECT_EQ(metricsLine(record()).find("loss_scale"), std::string::npos);
  EXPECT_EQ(metricsLine(record()).find("skipped"), std::string::npos);
  StepRecord scaled = record();
  scaled.lossScale = 65536;
  scaled.skipped = false;
  EXPECT_EQ(field(metricsLine(scaled), "loss_scale"), "65536");
  EXPECT_EQ(field(metricsLine(scaled), "skipped"), "false");
  EXPECT_NE(consoleLine(scaled).find(" scale 65536"), std::string::npos) << consoleLine(scaled);
  EXPECT_EQ(consoleLine(scaled).find("skipped"), std::string::npos);
  scaled.lossScale = 0.5;
  scaled.skipped = true;
  EXPECT_EQ(field(metricsLine(scaled), "loss_scale"), "0.5");
  EXPECT_EQ(field(metricsLine(scaled), "skipped"), "true");
  EXPECT_NE(consoleLine(scaled).find("skipped"), std::string::npos) << consoleLine(scaled);
}

TEST(TrainLogTest, MetricsLineHasEveryKey) {
  EXPECT_EQ(metricsLine(record()),
            "{\"step\": 5, \"loss\": 4.12345648, \"lr\": 0.001, \"samples_per_s\": 16, "
            "\"tokens_per_s\": 1024, \"step_time_s\": 0.5, \"peak_bytes\": 12897484}");
  StepRecord noTokens = record();
  noTokens.tokens = 0;
  EXPECT_EQ(metricsLine(noTokens).find("tokens_per_s"), std::string::npos);
  StepRecord diverged = record();
  diverged.loss = std::numeric_limits<float>::quiet_NaN();
  EXPECT_EQ(field(metricsLine(diverged), "loss"), "null");
  diverged.loss = -std::numeric_limits<float>::infinity();
  EXPECT_EQ(field(metricsLine(diverged), "loss"), "null");
  // A device with memory of its own (CUDA) adds what it uses beyond the plan.
  EXPECT_EQ(metricsLine(record()).find("device_context_bytes"), std::string::npos);
  StepRecord gpu = record();
  gpu.deviceContextBytes = 536870912;
  EXPECT_EQ(field(metricsLine(gpu), "device_context_bytes"), "536870912");
  EXPECT_EQ(field(metricsLine(gpu), "peak_bytes"), "12897484");
  // A step a checkpoint followed reports the save's time and size.
  EXPECT_EQ(metricsLine(record()).find("checkpoint_s"), std::string::npos);
  StepRecord saved = record();
  saved.checkpointSeconds = 0.25;
  saved.checkpointBytes = 4096;
  EXPECT_EQ(field(metricsLine(saved), "checkpoint_s"), "0.25");
  EXPECT_EQ(field(metricsLine(saved), "checkpoint_bytes"), "4096");
  // A plan that outputs the gradient norm (--clip-grad-norm, --log-grad-norm)
  // logs it after lr, as the f32 it is (9 digits round-trip), null if not finite.
  EXPECT_EQ(metricsLine(record()).find("grad_norm"), std::string::npos);
  StepRecord clipped = record();
  clipped.gradNorm = static_cast<double>(1.2345678f);
  EXPECT_EQ(field(metricsLine(clipped), "grad_norm"), "1.23456776");
  EXPECT_LT(metricsLine(clipped).find("\"lr\""), metricsLine(clipped).find("\"grad_norm\""));
  clipped.gradNorm = std::numeric_limits<double>::infinity();
  EXPECT_EQ(field(metricsLine(clipped), "grad_norm"), "null");
}

TEST(TrainLogTest, ValidationIsReportedOnItsStep) {
  EXPECT_EQ(metricsLine(record()).find("val_loss"), std::string::npos);
  EXPECT_EQ(consoleLine(record()).find("val_loss"), std::string::npos);
  StepRecord evaluated = record();
  evaluated.valLoss = 4.2645777066548662; // a mean of f32 losses: a double
  evaluated.evalSeconds = 0.125;
  std::string line = metricsLine(evaluated);
  EXPECT_EQ(std::strtod(field(line, "val_loss").c_str(), nullptr), *evaluated.valLoss) << line;
  EXPECT_EQ(field(line, "eval_time_s"), "0.125");
  EXPECT_EQ(consoleLine(evaluated),
            "step 5/100 loss 4.123456 lr 1.000e-03 1024 tok/s 12.3 MiB val_loss 4.264578");
  evaluated.valLoss = std::numeric_limits<double>::quiet_NaN();
  EXPECT_EQ(field(metricsLine(evaluated), "val_loss"), "null");
}

TEST(TrainLogTest, LossAndLrRoundTripExactly) {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  StepRecord r = record();
  for (int i = 0; i < 20000; ++i) {
    uint32_t b = bits(rng);
    float loss;
    std::memcpy(&loss, &b, 4);
    if (!std::isfinite(loss))
      continue;
    r.loss = loss;
    r.lr = static_cast<double>(loss) * 1.0000001;
    std::string line = metricsLine(r);
    float back = std::strtof(field(line, "loss").c_str(), nullptr);
    double wide = std::strtod(field(line, "loss").c_str(), nullptr);
    ASSERT_EQ(std::memcmp(&back, &loss, 4), 0) << line;
    ASSERT_EQ(static_cast<float>(wide), loss) << line; // as Python's float() then f32
    ASSERT_EQ(std::strtod(field(line, "lr").c_str(), nullptr), r.lr) << line;
  }
}

TEST(TrainLogTest, ConsoleLineAndBytes) {
  EXPECT_EQ(consoleLine(record()), "step 5/100 loss 4.123456 lr 1.000e-03 1024 tok/s 12.3 MiB");
  StepRecord noTokens = record();
  noTokens.tokens = 0;
  EXPECT_EQ(consoleLine(noTokens), "step 5/100 loss 4.123456 lr 1.000e-03 16.0 samples/s 12.3 MiB");
  StepRecord clipped = record();
  clipped.gradNorm = 0.51234;
  EXPECT_EQ(consoleLine(clipped),
            "step 5/100 loss 4.123456 lr 1.000e-03 grad_norm 0.5123 1024 tok/s 12.3 MiB");
}

TEST(TrainLogTest, Cadence) {
  EXPECT_EQ(defaultLogEvery(1), 1);
  EXPECT_EQ(defaultLogEvery(50), 1);
  EXPECT_EQ(defaultLogEvery(51), 2);
  EXPECT_EQ(defaultLogEvery(1000), 20);
  EXPECT_EQ(defaultLogEvery(1001), 21);
  auto logged = [](int64_t first, int64_t last, int64_t every) {
    std::vector<int64_t> steps;
    for (int64_t t = first; t <= last; ++t)
      if (shouldLog(t, first, last, every))
        steps.push_back(t);
    return steps;
  };
  EXPECT_EQ(logged(1, 10, 4), (std::vector<int64_t>{1, 4, 8, 10}));
  EXPECT_EQ(logged(1, 3, 1), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(logged(1, 1000, defaultLogEvery(1000)).size(), 51u); // 1, 20, 40, ..., 1000
}

class MetricsFileTest : public formattest::FormatTest {
protected:
  MetricsFileTest() : FormatTest("fsdp-metrics-", "m.jsonl") {}
};

TEST_F(MetricsFileTest, LinesAreOnDiskAsSoonAsWritten) {
  MetricsFile file;
  ASSERT_TRUE(file.open(path).isOk());
  StepRecord r = record();
  ASSERT_TRUE(file.write(r).isOk());
  EXPECT_EQ(formattest::readBytes(path), metricsLine(r) + "\n"); // still open: flushed
  r.step = 6;
  ASSERT_TRUE(file.write(r).isOk());
  std::string both = formattest::readBytes(path);
  EXPECT_EQ(std::count(both.begin(), both.end(), '\n'), 2);
  if (havePython())
    runPython("import json, sys\n"
              "rows = [json.loads(l) for l in open(sys.argv[1])]\n"
              "assert [r['step'] for r in rows] == [5, 6], rows\n"
              "import numpy\n"
              "assert numpy.float32(rows[0]['loss']) == numpy.float32(4.1234565), rows\n",
              path);
  MetricsFile bad;
  EXPECT_NE(bad.open(dir + "/no/such/dir/m.jsonl").message().find("cannot create"),
            std::string::npos);
}

} // namespace
} // namespace fsdp::rt
