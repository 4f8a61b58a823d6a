//===- LossScaler.cpp - torch.amp.GradScaler's scale update ---------------===//
//
// torch's _amp_update_scale_ (CPU and CUDA alike), in f32 as its scale
// tensor: backoff on inf/NaN; otherwise count the good step and grow the
// scale at the interval, keeping the old scale when the grown one is not
// finite.
//
//===----------------------------------------------------------------------===//

#include "runtime/train/LossScaler.h"

#include <cmath>

namespace fsdp::rt {

void LossScaler::update(bool foundInf) {
  if (foundInf) {
    state_.scale *= kBackoffFactor;
    state_.growthTracker = 0;
    return;
  }
  ++state_.optimizerSteps;
  const int64_t successful = state_.growthTracker + 1;
  if (successful == growthInterval_) {
    const float grown = state_.scale * kGrowthFactor;
    if (std::isfinite(grown))
      state_.scale = grown;
    state_.growthTracker = 0;
  } else {
    state_.growthTracker = successful;
  }
}

} // namespace fsdp::rt
