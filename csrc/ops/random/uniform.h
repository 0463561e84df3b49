// Device-side random numbers from a counter-based generator: the
// generator's (seed, offset) are runtime inputs, so the same seed gives the
// same numbers and nothing recompiles from call to call.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Uniform floats in [0, 1) of `dims`, as f32, from 0-dim u64 `seed` and
// `offset` (THREE_FRY keyed by both).
hlo::Value uniform_f32(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                       const std::vector<int64_t>& dims);

// dropout: (where(keep, x * scale, 0), keep) with keep ~ Bernoulli(1 - p);
// `p` and `scale` are 0-dim f32 runtime scalars.
std::pair<hlo::Value, hlo::Value> lower_dropout(hlo::Builder& b, const hlo::Value& x, const hlo::Value& seed,
                                                const hlo::Value& offset, const hlo::Value& p,
                                                const hlo::Value& scale);

// grad * mask * scale
hlo::Value lower_dropout_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& mask,
                                  const hlo::Value& scale);

}  // namespace torch_tpu::ops
