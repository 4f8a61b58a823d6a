//===- LrSchedule.cpp - learning rate per step ----------------------------===//
//
// Parsing is strict (the whole text must be one of the forms, numbers
// finite, WARMUP and DECAY non-negative integers, MIN_LR non-negative)
// because a misspelt schedule that silently became `constant` would waste a
// run. The arithmetic follows transformers' lambdas operation for operation
// (LrSchedule.h), so that the rates are theirs bit for bit.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/LrSchedule.h"

#include "runtime/support/ParseNumber.h"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <vector>

namespace fsdp::rt {
namespace {

constexpr char kForms[] = "valid forms: constant, constant:WARMUP, cosine:WARMUP[:MIN_LR], "
                          "linear:WARMUP[:MIN_LR], wsd:WARMUP:DECAY[:MIN_LR] "
                          "(e.g. cosine:100:1e-5, wsd:100:200)";

Status bad(const std::string &text, const std::string &why) {
  return Status::error("--lr-schedule: invalid value '" + text + "'" +
                       (why.empty() ? "" : " (" + why + ")") + "; " + kForms);
}

std::vector<std::string> splitColons(const std::string &text) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t colon; (colon = text.find(':', start)) != std::string::npos; start = colon + 1)
    parts.push_back(text.substr(start, colon - start));
  parts.push_back(text.substr(start));
  return parts;
}

std::string rate(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

/// A step count: parseWholeInt's, but starting with a digit (no blanks,
/// no sign), so that negative counts are refused here.
bool parseSteps(const std::string &text, int64_t &out) {
  return !text.empty() && std::isdigit(static_cast<unsigned char>(text[0])) &&
         parseWholeInt(text, out);
}

bool parseRate(const std::string &text, double &out) {
  double value;
  if (!parseWholeDouble(text, value) || value < 0)
    return false;
  out = value;
  return true;
}

} // namespace

Status LrSchedule::parse(const std::string &text, LrSchedule &out) {
  const std::vector<std::string> parts = splitColons(text);
  LrSchedule schedule;
  // The integer fields after the name, then at most one MIN_LR.
  size_t steps = 0, maxFields = 0;
  if (parts[0] == "constant") {
    schedule.kind = Kind::Constant;
    maxFields = 1; // [WARMUP], no MIN_LR
  } else if (parts[0] == "cosine" || parts[0] == "linear") {
    schedule.kind = parts[0] == "cosine" ? Kind::Cosine : Kind::Linear;
    steps = 1;
    maxFields = 2;
  } else if (parts[0] == "wsd") {
    schedule.kind = Kind::Wsd;
    steps = 2;
    maxFields = 3;
  } else {
    return bad(text, "");
  }
  const size_t fields = parts.size() - 1;
  if (fields < steps || fields > maxFields)
    return bad(text, fields < steps ? parts[0] + " needs " +
                                          (steps == 1 ? "WARMUP" : "WARMUP and DECAY")
                                    : "too many fields");
  if (fields >= 1 && !parseSteps(parts[1], schedule.warmup))
    return bad(text, "WARMUP must be an integer >= 0");
  if (schedule.kind == Kind::Wsd && !parseSteps(parts[2], schedule.decay))
    return bad(text, "DECAY must be an integer >= 0");
  if (schedule.kind != Kind::Constant && fields == maxFields &&
      !parseRate(parts.back(), schedule.minLr))
    return bad(text, "MIN_LR must be a finite number >= 0");
  out = schedule;
  return Status::ok();
}

Status LrSchedule::check(const std::string &text, double base, int64_t totalSteps) const {
  if (minLr > base)
    return Status::error(cat("--lr-schedule=", text, ": MIN_LR ", rate(minLr),
                             " is above the base learning rate ", rate(base),
                             " (--lr, or the plan's compiled --lr); a decay must go down"));
  if (kind == Kind::Wsd && warmup + decay > totalSteps)
    return Status::error(cat("--lr-schedule=", text, ": WARMUP + DECAY = ", warmup + decay,
                             " steps, more than the run's ", totalSteps,
                             " (--max-steps, default --steps)"));
  return Status::ok();
}

double LrSchedule::at(double base, int64_t step, int64_t totalSteps) const {
  if (step <= warmup)
    return base * (static_cast<double>(step) / static_cast<double>(warmup));
  if (kind == Kind::Constant)
    return base;
  // Decay to minLr: the last step (and any past it) is minLr itself.
  const int64_t decayStart = kind == Kind::Wsd ? totalSteps - decay : warmup;
  if (step <= decayStart)
    return base; // wsd's stable part
  if (step >= totalSteps)
    return minLr;
  const double span = static_cast<double>(totalSteps - decayStart);
  double factor;
  const double progress = static_cast<double>(step - decayStart) / span;
  if (kind == Kind::Cosine)
    factor = 0.5 * (1.0 + std::cos(M_PI * progress));
  else if (kind == Kind::Wsd)
    factor = 1.0 - progress; // get_wsd_schedule's spelling of the line
  else
    factor = static_cast<double>(totalSteps - step) / span; // get_linear_schedule_with_warmup's
  if (minLr == 0)
    return base * factor;
  const double ratio = minLr / base;
  return base * (factor * (1.0 - ratio) + ratio);
}

} // namespace fsdp::rt
