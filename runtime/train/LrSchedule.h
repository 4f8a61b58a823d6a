//===- LrSchedule.h - learning rate per step ------------------------------===//
//
// The learning rate is a run-time input of a training plan (an f64 scalar
// the runtime writes before each step), so a schedule changes nothing in the
// compiled step. Four schedules, spelled as on fsdp-run's command line, over
// a run of K steps (fsdp-run's --max-steps, default --steps) with base rate
// `base`, MIN_LR `min` (default 0) and r = min / base:
//
//   constant[:WARMUP]            warmup, then base
//   cosine:WARMUP[:MIN_LR]       warmup, then base * (f * (1 - r) + r) with
//                                f = 0.5 * (1 + cos(pi * (t - W) / (K - W)))
//   linear:WARMUP[:MIN_LR]       warmup, then the same with f = (K - t) / (K - W)
//   wsd:WARMUP:DECAY[:MIN_LR]    warmup-stable-decay: warmup, base until step
//                                K - DECAY, then linear decay over the last
//                                DECAY steps: f = 1 - (t - (K - DECAY)) / DECAY
//
// where the warmup of every schedule is base * (t / W) for steps t <= W.
// Step t is 1-based and every decay reaches exactly MIN_LR on step K (and
// stays there past it). The convention is transformers' schedules
// (get_constant_schedule_with_warmup, get_linear_schedule_with_warmup,
// get_cosine_with_min_lr_schedule_with_warmup, get_wsd_schedule with
// decay_type="linear") evaluated at the number of steps completed *after*
// step t: our step t takes base * lambda(t), the rate such a LambdaLR holds
// after t scheduler.step() calls, so no step runs at rate 0 and the last
// one runs at MIN_LR. Computed in that order (the factor first, then
// scaled), the rates equal those lambdas' bit for bit, except on step K,
// which is MIN_LR itself (base * r may differ by an ulp).
// tests/e2e/test_schedules.py checks this against the formulas and against
// torch's LinearLR and CosineAnnealingLR. One difference from
// get_wsd_schedule: its warmup rises from MIN_LR, ours from 0 like every
// other schedule here (the same when MIN_LR is 0).
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_TRAIN_LRSCHEDULE_H
#define FSDP_RUNTIME_TRAIN_LRSCHEDULE_H

#include "runtime/support/Status.h"

#include <cstdint>
#include <string>

namespace fsdp::rt {

struct LrSchedule {
  enum class Kind { Constant, Cosine, Linear, Wsd };
  Kind kind = Kind::Constant;
  int64_t warmup = 0; // steps of linear warmup (may be 0)
  int64_t decay = 0;  // wsd: the last steps, which decay to minLr
  double minLr = 0;   // cosine, linear, wsd: the rate reached on the last step

  /// Parses one of the forms above; errors list the forms.
  static Status parse(const std::string &text, LrSchedule &out);

  /// The checks that need the run: MIN_LR at most `base`, and for wsd
  /// WARMUP + DECAY at most `totalSteps` (the steps the schedule spans).
  /// `text` is the schedule as given, for the message.
  Status check(const std::string &text, double base, int64_t totalSteps) const;

  /// The rate of 1-based step `step` of a run that ends at step
  /// `totalSteps`, scaling `base`.
  double at(double base, int64_t step, int64_t totalSteps) const;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_LRSCHEDULE_H
