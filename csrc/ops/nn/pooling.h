// Lowerings of max / average / adaptive pooling over the trailing
// `kernel.size()` dims of the input (any leading batch and channel dims),
// forward and backward.
//
// Max pooling returns PyTorch's indices: the flat index of the maximum in
// its input plane, the first one on ties, NaN winning (the last NaN). The
// backward adds each output gradient at its index. Average pooling is a
// windowed sum divided by PyTorch's divisor; its backward spreads the
// divided gradient back over each window (a padded, interior-dilated
// windowed sum). 16-bit floats accumulate in f32.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// One entry per pooled dim. `output` is the pooled size ATen computed
// (ceil_mode included); windows past the padded input see nothing.
struct PoolWindow {
  std::vector<int64_t> kernel, stride, padding, dilation, output;
};

// (values, s64 indices).
std::pair<hlo::Value, hlo::Value> lower_max_pool(hlo::Builder& b, const hlo::Value& x, const PoolWindow& w);

// The gradient of an input of `input_dims` for max-pool outputs that came
// from `indices` (s64, grad's shape; flat in the plane of the trailing
// `pooled_dims` dims). Also serves adaptive max pooling.
hlo::Value lower_max_pool_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& indices,
                                   const std::vector<int64_t>& input_dims, int64_t pooled_dims);

hlo::Value lower_avg_pool(hlo::Builder& b, const hlo::Value& x, const PoolWindow& w, bool count_include_pad,
                          std::optional<int64_t> divisor_override);

hlo::Value lower_avg_pool_backward(hlo::Builder& b, const hlo::Value& grad, const std::vector<int64_t>& input_dims,
                                   const PoolWindow& w, bool count_include_pad,
                                   std::optional<int64_t> divisor_override);

// Adaptive pooling to `output` (one size per pooled dim): output o of an
// axis of size n averages [floor(o n / out), ceil((o + 1) n / out)).
hlo::Value lower_adaptive_avg_pool(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& output);
hlo::Value lower_adaptive_avg_pool_backward(hlo::Builder& b, const hlo::Value& grad,
                                            const std::vector<int64_t>& input_dims, int64_t pooled_dims);
std::pair<hlo::Value, hlo::Value> lower_adaptive_max_pool(hlo::Builder& b, const hlo::Value& x,
                                                          const std::vector<int64_t>& output);

}  // namespace torch_tpu::ops
