// Lowerings of softmax and log_softmax along one dimension and of their
// backward ops. Computed in f32 for f16 / bf16 inputs and rounded once at
// the end; the maximum is subtracted first so exp() never overflows.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// exp(x - max) / sum(exp(x - max)) along `dim` (wrapped; 0 for a 0-dim x),
// in `out` (x's type, or f32 for half_to_float).
hlo::Value lower_softmax(hlo::Builder& b, const hlo::Value& x, int64_t dim, ElementType out);

// x - max - log(sum(exp(x - max))) along `dim`.
hlo::Value lower_log_softmax(hlo::Builder& b, const hlo::Value& x, int64_t dim, ElementType out);

// Gradient of softmax from its output y: y * (grad - sum(grad * y, dim)).
hlo::Value lower_softmax_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                                  int64_t dim, ElementType out);

// Gradient of log_softmax from its output y: grad - exp(y) * sum(grad, dim).
hlo::Value lower_log_softmax_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                                      int64_t dim, ElementType out);

// softmax with the elements where `mask` (pred, x's shape) is true taken
// as -inf, as CPU's _masked_softmax: a row masked whole comes out NaN.
hlo::Value lower_masked_softmax(hlo::Builder& b, const hlo::Value& x, const hlo::Value& mask, int64_t dim,
                                ElementType out);

// Its gradient: y * (grad - sum(grad * y)) over the unmasked elements, 0
// where `mask` is true.
hlo::Value lower_masked_softmax_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                                         const hlo::Value& mask, int64_t dim, ElementType out);

}  // namespace torch_tpu::ops
