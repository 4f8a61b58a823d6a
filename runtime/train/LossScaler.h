//===- LossScaler.h - torch.amp.GradScaler's scale, on the host -----------===//
//
// The state dynamic loss scaling carries from step to step (fp16 plans,
// --param-dtype=f16), updated exactly as torch.amp.GradScaler.update
// (torch's _amp_update_scale_): after a step whose gradients held an inf or
// NaN the scale is multiplied by 0.5 and the run of good steps restarts;
// after a good step the run grows, and reaching `growthInterval` doubles
// the scale (unless that overflows f32) and restarts it. The optimizer's
// own step count (Adam's bias correction) advances on good steps only,
// since torch does not call optimizer.step() on a skipped one. The scale
// lives in f32, as torch's scale tensor does; its reciprocal is computed in
// f64 and rounded to f32, as GradScaler.unscale_ does.
//
//===----------------------------------------------------------------------===//

#ifndef FSDP_RUNTIME_TRAIN_LOSSSCALER_H
#define FSDP_RUNTIME_TRAIN_LOSSSCALER_H

#include <cstdint>

namespace fsdp::rt {

struct LossScalerState {
  float scale = 65536.0f;      // GradScaler's init_scale (2**16)
  int64_t growthTracker = 0;   // good steps since the scale last changed
  int64_t optimizerSteps = 0;  // updates actually applied (torch's state "step")
};

class LossScaler {
public:
  static constexpr float kGrowthFactor = 2.0f, kBackoffFactor = 0.5f;
  explicit LossScaler(int64_t growthInterval = 2000) : growthInterval_(growthInterval) {}

  const LossScalerState &state() const { return state_; }
  void setState(const LossScalerState &state) { state_ = state; }
  int64_t growthInterval() const { return growthInterval_; }

  /// The reciprocal the step unscales gradients with: 1/scale in f64,
  /// rounded to f32.
  float invScale() const { return static_cast<float>(1.0 / static_cast<double>(state_.scale)); }
  /// The step number the optimizer takes next (1-based).
  int64_t nextOptimizerStep() const { return state_.optimizerSteps + 1; }

  /// Records one step's outcome: `foundInf` when it was skipped.
  void update(bool foundInf);

private:
  int64_t growthInterval_;
  LossScalerState state_;
};

} // namespace fsdp::rt

#endif // FSDP_RUNTIME_TRAIN_LOSSSCALER_H
