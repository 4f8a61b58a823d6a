//===- LrSchedule.cpp - learning rate per step ----------------------------===//
//
// Parsing is strict (the whole text must be one of the forms, numbers
// finite, WARMUP a non-negative integer, MIN_LR non-negative) because a
// misspelt schedule that silently became `constant` would waste a run.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/LrSchedule.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

namespace fsdp::rt {
namespace {

constexpr char kForms[] = "valid forms: constant, cosine:WARMUP, cosine:WARMUP:MIN_LR "
                          "(e.g. cosine:100:1e-5)";

Status bad(const std::string &text, const std::string &why) {
  return Status::error("--lr-schedule: invalid value '" + text + "'" +
                       (why.empty() ? "" : " (" + why + ")") + "; " + kForms);
}

} // namespace

Status LrSchedule::parse(const std::string &text, LrSchedule &out) {
  if (text == "constant") {
    out = LrSchedule();
    return Status::ok();
  }
  const std::string prefix = "cosine:";
  if (text.compare(0, prefix.size(), prefix) != 0)
    return bad(text, "");
  std::string rest = text.substr(prefix.size());
  size_t colon = rest.find(':');
  std::string warmupText = rest.substr(0, colon);
  LrSchedule schedule;
  schedule.kind = Kind::Cosine;
  char *end = nullptr;
  errno = 0;
  long long warmup = std::strtoll(warmupText.c_str(), &end, 10);
  if (warmupText.empty() || *end != '\0' || errno != 0 || warmup < 0 ||
      !std::isdigit(static_cast<unsigned char>(warmupText[0])))
    return bad(text, "WARMUP must be an integer >= 0");
  schedule.warmup = warmup;
  if (colon != std::string::npos) {
    std::string minText = rest.substr(colon + 1);
    errno = 0;
    double minLr = std::strtod(minText.c_str(), &end);
    if (minText.empty() || *end != '\0' || errno != 0 || !std::isfinite(minLr) || minLr < 0)
      return bad(text, "MIN_LR must be a finite number >= 0");
    schedule.minLr = minLr;
  }
  out = schedule;
  return Status::ok();
}

double LrSchedule::at(double base, int64_t step, int64_t totalSteps) const {
  if (kind == Kind::Constant)
    return base;
  if (step <= warmup)
    return base * static_cast<double>(step) / static_cast<double>(warmup);
  // step > warmup implies totalSteps > warmup whenever step <= totalSteps;
  // past the end the rate stays at the minimum.
  if (step >= totalSteps)
    return minLr;
  double progress =
      static_cast<double>(step - warmup) / static_cast<double>(totalSteps - warmup);
  return minLr + (base - minLr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

} // namespace fsdp::rt
