// Device-side random numbers from a counter-based generator: the
// generator's (seed, offset) are runtime inputs, so the same seed gives the
// same numbers and nothing recompiles from call to call.
//
// Counters: random_bits() gives element i (row-major) the counter
// offset + i, so a call drawing N elements consumes the counters
// [offset, offset + N). The ATen glue advances the generator's offset by
// what each op draws, so consecutive ops never share counters.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Random bits of `type` (u32 or u64) and `dims` from 0-dim u64 `seed` and
// `offset` (THREE_FRY keyed by the seed, counting from the offset).
hlo::Value random_bits(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, ElementType type,
                       const std::vector<int64_t>& dims);

// Which interval unit_uniform() covers.
enum class UnitInterval {
  kClosedOpen,  // [0, 1): 24 random bits for f32, 53 for f64
  kOpen,        // (0, 1): 23 / 52 random bits, centred (k + 1/2) * 2^-bits
};

// `count` independent tensors of `dims` uniform on the unit interval, of
// `type` (f32 or f64); consumes count * numel(dims) counters.
std::vector<hlo::Value> unit_uniform(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                                     const std::vector<int64_t>& dims, ElementType type, int count,
                                     UnitInterval interval = UnitInterval::kClosedOpen);

// Uniform floats in [0, 1) of `dims`, as f32 (one counter per element).
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
