// Lowerings of the scans along one dimension: cumsum, cumprod, cummax /
// cummin (with indices) and logcumsumexp.
//
// A scan is a log-step (Hillis-Steele) prefix combine: ceil(log2(n)) steps
// of shift-and-combine over whole tensors, by blocks when long. XLA:CPU and
// XLA:GPU lower a cumulative reduce_window quadratically, so this is the
// portable form. Long sums of floats and counts of booleans scan each block
// by a matrix product with a triangle of ones instead (lower_cumsum).
// `dim` is already wrapped by the ATen glue; a 0-dim input scans nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Combines an earlier prefix (first) with a later element (second), value
// by value over whole tensors, for a tuple of values scanned together.
using ScanCombine = std::function<std::vector<hlo::Value>(
    hlo::Builder&, const std::vector<hlo::Value>& earlier, const std::vector<hlo::Value>& later)>;

// Inclusive prefix scan of the tuple `xs` (one shape) along `dim`.
// `identities` are 0-dim values of the xs' types, shifted in at the front.
std::vector<hlo::Value> scan(hlo::Builder& b, const std::vector<hlo::Value>& xs, int64_t dim,
                             const std::vector<hlo::Value>& identities, const ScanCombine& combine);

// x converted to `out` and summed (multiplied) cumulatively; half-precision
// floats accumulate in f32 and are rounded once, as on CPU.
hlo::Value lower_cumsum(hlo::Builder& b, const hlo::Value& x, int64_t dim, ElementType out);
hlo::Value lower_cumprod(hlo::Builder& b, const hlo::Value& x, int64_t dim, ElementType out);

// Running maximum (minimum) and the s64 index where it was found: the last
// position of an equal value, the last NaN once one was seen (as on CPU).
std::pair<hlo::Value, hlo::Value> lower_cummax_min(hlo::Builder& b, const hlo::Value& x, int64_t dim,
                                                   bool is_max);

// log(cumsum(exp(x))) computed stably (a float type).
hlo::Value lower_logcumsumexp(hlo::Builder& b, const hlo::Value& x, int64_t dim);

}  // namespace torch_tpu::ops
