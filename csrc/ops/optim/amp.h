// Lowerings of the GradScaler ops: unscaling gradients while looking for
// infinities and NaNs, and updating the loss scale, both on the device so a
// training step never waits for the host.
#pragma once

#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Each gradient times `inv_scale` (0-dim f32), in its own type (bf16 / f16
// multiply in f32); the new found_inf is 1 where any input element is not
// finite and the old found_inf otherwise. Returns the gradients, then found_inf.
std::vector<hlo::Value> lower_unscale_and_check(hlo::Builder& b, const std::vector<hlo::Value>& grads,
                                                const hlo::Value& found_inf, const hlo::Value& inv_scale);

// The new (scale, growth_tracker), as CPU's _amp_update_scale_ computes them:
// back off and reset after an overflow; grow every `growth_interval`
// successful steps unless the grown scale is not finite.
std::pair<hlo::Value, hlo::Value> lower_update_scale(hlo::Builder& b, const hlo::Value& scale,
                                                     const hlo::Value& growth_tracker, const hlo::Value& found_inf,
                                                     const hlo::Value& growth_factor,
                                                     const hlo::Value& backoff_factor,
                                                     const hlo::Value& growth_interval);

}  // namespace torch_tpu::ops
