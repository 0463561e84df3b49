// Lowerings that move elements around without computing on them: flip,
// roll, repeat, and the index vector of repeat_interleave.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// `x` reversed along each of `dims` (wrapped, unique).
hlo::Value lower_flip(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims);

// `x` rotated by shifts[i] along dims[i] (elements move to higher indices
// for a positive shift). An empty `dims` rolls the flattened tensor by
// shifts[0] and restores its shape.
hlo::Value lower_roll(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& shifts,
                      const std::vector<int64_t>& dims);

// `x` tiled repeats[i] times along dimension i; `repeats` has at least x's
// rank, leading extra entries add dimensions.
hlo::Value lower_repeat(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& repeats);

// For a 1-D integer `repeats` of non-negative counts: the s64 vector of
// length `out_size` in which index i appears repeats[i] times, in order.
hlo::Value lower_repeat_interleave_indices(hlo::Builder& b, const hlo::Value& repeats, int64_t out_size);

}  // namespace torch_tpu::ops
