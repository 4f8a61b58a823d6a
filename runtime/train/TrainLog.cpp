//===- TrainLog.cpp - what a training run reports per step ----------------===//
//
// Formatting goes through snprintf with explicit precisions: %.9g is the
// shortest fixed precision that round-trips every f32 (widened to double),
// %.17g every double (the learning rate), and throughput needs no more than
// six digits.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/TrainLog.h"

#include "runtime/support/ByteSize.h"

#include <cerrno>
#include <cmath>
#include <cstring>

namespace fsdp::rt {
namespace {

/// A JSON number, or null for an inf or NaN (JSON has neither).
std::string jsonNumber(const char *fmt, double value) {
  return std::isfinite(value) ? formatNumber(fmt, value) : std::string("null");
}

double perSecond(int64_t count, double seconds) {
  return seconds > 0 ? static_cast<double>(count) / seconds : 0.0;
}

} // namespace

std::string metricsLine(const StepRecord &r) {
  double loss = r.loss;
  std::string line = "{\"step\": " + std::to_string(r.step);
  line += ", \"loss\": " + jsonNumber(r.lossIsF64 ? "%.17g" : "%.9g", loss);
  line += ", \"lr\": " + formatNumber("%.17g", r.lr);
  if (r.gradNorm)
    line += ", \"grad_norm\": " + jsonNumber("%.9g", *r.gradNorm);
  line += ", \"samples_per_s\": " + formatNumber("%.6g", perSecond(r.samples, r.stepSeconds));
  if (r.tokens > 0)
    line += ", \"tokens_per_s\": " + formatNumber("%.6g", perSecond(r.tokens, r.stepSeconds));
  line += ", \"step_time_s\": " + formatNumber("%.6g", r.stepSeconds);
  line += ", \"peak_bytes\": " + std::to_string(r.peakBytes);
  if (r.hostBytes)
    line += ", \"host_bytes\": " + std::to_string(r.hostBytes);
  if (r.deviceContextBytes)
    line += ", \"device_context_bytes\": " + std::to_string(*r.deviceContextBytes);
  if (r.checkpointSeconds >= 0)
    line += ", \"checkpoint_s\": " + formatNumber("%.6g", r.checkpointSeconds) +
            ", \"checkpoint_bytes\": " + std::to_string(r.checkpointBytes);
  if (r.valLoss)
    line += ", \"val_loss\": " + jsonNumber("%.17g", *r.valLoss) +
            ", \"eval_time_s\": " + formatNumber("%.6g", r.evalSeconds);
  // fp16 loss scaling (issue 19, C).
  if (r.lossScale)
    line += ", \"loss_scale\": " + formatNumber("%.9g", *r.lossScale);
  if (r.skipped)
    line += std::string(", \"skipped\": ") + (*r.skipped ? "true" : "false");
  line += "}";
  return line;
}

std::string formatNumber(const char *fmt, double value) {
  char text[64];
  std::snprintf(text, sizeof(text), fmt, value);
  return text;
}

std::string consoleLine(const StepRecord &r) {
  std::string line = "step " + std::to_string(r.step) + "/" + std::to_string(r.totalSteps);
  line += " loss " + formatNumber("%.6f", static_cast<double>(r.loss));
  line += " lr " + formatNumber("%.3e", r.lr);
  if (r.gradNorm)
    line += " grad_norm " + formatNumber("%.4g", *r.gradNorm);
  if (r.tokens > 0)
    line += " " + formatNumber("%.0f", perSecond(r.tokens, r.stepSeconds)) + " tok/s";
  else
    line += " " + formatNumber("%.1f", perSecond(r.samples, r.stepSeconds)) + " samples/s";
  line += " " + formatBytes(r.peakBytes);
  if (r.valLoss)
    line += " val_loss " + formatNumber("%.6f", *r.valLoss);
  // fp16 loss scaling (issue 19, C).
  if (r.lossScale)
    line += " scale " + formatNumber("%.9g", *r.lossScale);
  if (r.skipped && *r.skipped)
    line += " (skipped: inf/nan gradient)";
  return line;
}

int64_t defaultLogEvery(int64_t totalSteps) {
  return totalSteps <= 50 ? 1 : (totalSteps + 49) / 50;
}

bool shouldLog(int64_t step, int64_t firstStep, int64_t lastStep, int64_t every) {
  return step == firstStep || step == lastStep || (every > 0 && step % every == 0);
}

MetricsFile::~MetricsFile() {
  if (file_)
    std::fclose(file_);
}

Status MetricsFile::open(const std::string &path) {
  path_ = path;
  file_ = std::fopen(path.c_str(), "w");
  if (!file_)
    return Status::error("metrics file '" + path + "': cannot create: " + std::strerror(errno));
  return Status::ok();
}

Status MetricsFile::write(const StepRecord &record) {
  if (!file_)
    return Status::error("metrics file is not open");
  std::string line = metricsLine(record) + "\n";
  if (std::fwrite(line.data(), 1, line.size(), file_) != line.size() || std::fflush(file_) != 0)
    return Status::error("metrics file '" + path_ + "': cannot write: " + std::strerror(errno));
  return Status::ok();
}

} // namespace fsdp::rt
