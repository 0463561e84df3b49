// Lowerings of embedding lookups and their gradient.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Rows of `weight` [N, D] picked by `indices` (any shape, an integer type):
// indices.shape + [D]. Out-of-range indices are clamped (XLA's gather), not
// checked: checking would need the values on the host.
hlo::Value lower_embedding(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices);

// The gradient of `weight` [num_weights, D]: each row of `grad` (shape
// indices.shape + [D]) added into the row its index names. Rows for
// `padding_idx` get nothing (padding_idx < 0: no padding row); with
// `scale_grad_by_freq` each contribution is divided by the number of times
// its index occurs. 16-bit floats accumulate in f32.
hlo::Value lower_embedding_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& indices,
                                    int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq);

}  // namespace torch_tpu::ops
