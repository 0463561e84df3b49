// Lowerings of padding: constant_pad_nd (a constant border, negative pads
// crop) and the reflection / replication pads with their backward.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// `x` with lows[d] / highs[d] elements of the 0-dim `value` (x's type)
// added before / after dimension d; negative amounts remove elements.
hlo::Value lower_constant_pad(hlo::Builder& b, const hlo::Value& x, const hlo::Value& value,
                              const std::vector<int64_t>& lows, const std::vector<int64_t>& highs);

enum class PadMode : char { kReflect = 'r', kReplicate = 'e' };

// Pads the trailing pads.size() dimensions of `x`: pads[i] = (low, high)
// of dimension rank - pads.size() + i. Reflect mirrors without repeating
// the edge; replicate repeats the edge element.
hlo::Value lower_index_pad(hlo::Builder& b, const hlo::Value& x, const std::vector<std::pair<int64_t, int64_t>>& pads,
                           PadMode mode);

// The gradient of lower_index_pad for an input of shape `input_dims`: each
// output gradient element is added to the input element it was read from.
hlo::Value lower_index_pad_backward(hlo::Builder& b, const hlo::Value& grad, const std::vector<int64_t>& input_dims,
                                    const std::vector<std::pair<int64_t, int64_t>>& pads, PadMode mode);

}  // namespace torch_tpu::ops
