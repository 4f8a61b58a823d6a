//===- LrSchedule.h - learning rate per step ------------------------------===//
//
// The learning rate is a run-time input of a training plan (an f64 scalar
// the runtime writes before each step), so a schedule changes nothing in the
// compiled step. Two schedules, spelled as on fsdp-run's command line:
// `constant` (the base rate every step) and `cosine:WARMUP[:MIN_LR]`: for
// step t = 1..K, base * t / WARMUP while t <= WARMUP, then
// min + (base - min) * 0.5 * (1 + cos(pi * (t - WARMUP) / (K - WARMUP))),
// which ends at exactly MIN_LR (default 0) on step K.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_LRSCHEDULE_H
#define FSDP_RUNTIME_LRSCHEDULE_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>

namespace fsdp::rt {

struct LrSchedule {
  enum class Kind { Constant, Cosine };
  Kind kind = Kind::Constant;
  int64_t warmup = 0; // cosine: steps of linear warmup (may be 0)
  double minLr = 0;   // cosine: the rate reached on the last step

  /// Parses `constant` or `cosine:WARMUP[:MIN_LR]`; errors list the forms.
  static Status parse(const std::string &text, LrSchedule &out);

  /// The rate of 1-based step `step` of a run that ends at step
  /// `totalSteps`, scaling `base`.
  double at(double base, int64_t step, int64_t totalSteps) const;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_LRSCHEDULE_H
