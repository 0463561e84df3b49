// Lowerings of torch.segment_reduce and its gradient: a floating-point
// tensor reduced over consecutive segments of one axis, the segments given
// per outer index by their lengths or by their offsets (device data).
//
// Each position's segment is computed in the program (how many segment ends
// lie at or before it), then one scatter combines every segment at once;
// nothing waits for the host. Positions outside every segment (before the
// first offset, past the last) contribute nothing and get a zero gradient.
#pragma once

#include <cstdint>
#include <optional>

#include "hlo/builder.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

// How segments are given: `bounds` has the data's dims before `axis`, then
// S lengths or S + 1 offsets (an integer type).
enum class SegmentBounds : bool { kLengths, kOffsets };

// data with dimension `axis` replaced by the S segments' reductions. kind is
// kSum, kMean, kMax, kMin or kProd. `initial` (0-dim, when given) starts
// every segment's reduction, as on CPU: mean divides (initial + sum) by the
// segment's length, and an empty segment is `initial`; without it an empty
// segment is the reduction's identity (-inf for max, inf for min) and NaN
// for mean. max and min propagate NaN.
hlo::Value lower_segment_reduce(hlo::Builder& b, const hlo::Value& data, const hlo::Value& bounds,
                                SegmentBounds given, int64_t axis, ScatterKind kind,
                                const std::optional<hlo::Value>& initial);

// The gradient of `data` from `grad` and the forward's `output` (both of
// the output's shape), by CPU's rules: max / min send the gradient to every
// element equal to the result (or NaN), split evenly among ties when it is
// positive; prod divides the result by the element, or multiplies the other
// elements (and `initial`) where the element is zero or NaN.
hlo::Value lower_segment_reduce_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                                         const hlo::Value& data, const hlo::Value& bounds, SegmentBounds given,
                                         int64_t axis, ScatterKind kind, const std::optional<hlo::Value>& initial);

// 0-dim i1: offsets decrease somewhere or leave [0, size] (CPU refuses a
// negative segment length).
hlo::Value segment_offsets_invalid(hlo::Builder& b, const hlo::Value& offsets, int64_t size);

}  // namespace torch_tpu::ops
