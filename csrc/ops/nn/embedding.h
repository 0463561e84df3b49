// Lowerings of embedding lookups and their gradient.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Rows of `weight` [N, D] picked by `indices` (any shape, an integer type):
// indices.shape + [D]. Out-of-range indices are clamped (XLA's gather); the
// glue reports them through a deferred check (aten/deferred_checks.h).
hlo::Value lower_embedding(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices);

// The gradient of `weight` [num_weights, D]: each row of `grad` (shape
// indices.shape + [D]) added into the row its index names. Rows for
// `padding_idx` get nothing (padding_idx < 0: no padding row); with
// `scale_grad_by_freq` each contribution is divided by the number of times
// its index occurs. 16-bit floats accumulate in f32.
hlo::Value lower_embedding_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& indices,
                                    int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq);

// embedding_renorm_ (F.embedding with max_norm): `weight` [N, D] with each
// row that `indices` (any shape) names rescaled by max_norm / (norm + 1e-7)
// where its norm_type-norm exceeds max_norm (norm_type inf / -inf: the
// largest / smallest magnitude, 0: the count of nonzeros). Out-of-range
// indices change nothing (the glue reports them).
hlo::Value lower_embedding_renorm(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices,
                                  double max_norm, double norm_type);

// Rows `indices` (any shape) of `table` [N, ...]: indices.shape + table.shape[1:].
hlo::Value gather_rows(hlo::Builder& b, const hlo::Value& table, const hlo::Value& indices);

// Adds `updates` [M, ...] into rows `indices` [M] of `into`.
hlo::Value scatter_add_rows(hlo::Builder& b, const hlo::Value& into, const hlo::Value& indices,
                            const hlo::Value& updates);

}  // namespace torch_tpu::ops
