// The Airy function Ai (torch.special.airy_ai).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Ai(x) for a float32 or float64 x.
hlo::Value lower_airy_ai(hlo::Builder& b, const hlo::Value& x);

}  // namespace torch_tpu::ops
