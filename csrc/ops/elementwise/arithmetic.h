// Lowerings of the arithmetic binary ops. Each takes the operands' logical
// values (any dtype, broadcastable shapes) and the result dtype PyTorch's
// type promotion chose, and returns the result.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// a + alpha * b (alpha absent: 1)
hlo::Value lower_add(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y,
                     const std::optional<hlo::Value>& alpha, ElementType out);
// a - alpha * b
hlo::Value lower_sub(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y,
                     const std::optional<hlo::Value>& alpha, ElementType out);
hlo::Value lower_mul(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out);

enum class RoundingMode { kTrue, kTrunc, kFloor };
// Division; integer operands with kTrue divide in `out` (a float type).
hlo::Value lower_div(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out,
                     RoundingMode mode);

// A tensor of `dims` filled with the 0-dim `value`.
hlo::Value lower_fill(hlo::Builder& b, const hlo::Value& value, const std::vector<int64_t>& dims,
                      ElementType out);

}  // namespace torch_tpu::ops
