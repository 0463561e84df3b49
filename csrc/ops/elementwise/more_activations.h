// Lowerings of the activations beyond activation.h (elu, hardswish,
// hardsigmoid, mish, log_sigmoid, glu, prelu, softshrink, hardshrink) and
// their backward ops. Float math: bf16 / f16 compute in f32 and round once,
// as PyTorch's CPU kernels do. Forward results have x's dtype; backward
// results have dtype `out`. Scalars (alpha, lambd, ...) are 0-dim values so
// they can be runtime inputs.
#pragma once

#include <cstdint>
#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// x > 0 ? x * scale : expm1(x * input_scale) * alpha * scale
hlo::Value lower_elu(hlo::Builder& b, const hlo::Value& x, const hlo::Value& alpha, const hlo::Value& scale,
                     const hlo::Value& input_scale);
// From the input (is_result false) or from the forward's output.
hlo::Value lower_elu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& saved,
                              const hlo::Value& alpha, const hlo::Value& scale, const hlo::Value& input_scale,
                              bool is_result, ElementType out);

hlo::Value lower_hardswish(hlo::Builder& b, const hlo::Value& x);
hlo::Value lower_hardswish_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x, ElementType out);
hlo::Value lower_hardsigmoid(hlo::Builder& b, const hlo::Value& x);
hlo::Value lower_hardsigmoid_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                      ElementType out);

// x * tanh(log1p(exp(x)))
hlo::Value lower_mish(hlo::Builder& b, const hlo::Value& x);
hlo::Value lower_mish_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x, ElementType out);

// (min(x, 0) - log1p(exp(-|x|)), exp(-|x|)): the output and the buffer the
// CPU kernel saves for the backward.
std::pair<hlo::Value, hlo::Value> lower_log_sigmoid(hlo::Builder& b, const hlo::Value& x);
hlo::Value lower_log_sigmoid_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                      ElementType out);

// a * sigmoid(b), a and b the halves of x along `dim` (even size).
hlo::Value lower_glu(hlo::Builder& b, const hlo::Value& x, int64_t dim);
hlo::Value lower_glu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x, int64_t dim,
                              ElementType out);

// x > 0 ? x : w * x, x and w broadcast, in `out`.
hlo::Value lower_prelu(hlo::Builder& b, const hlo::Value& x, const hlo::Value& w, ElementType out);
// (d input, d weight), both of the broadcast shape.
std::pair<hlo::Value, hlo::Value> lower_prelu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                                       const hlo::Value& w, ElementType out);

// x > l ? x - l : x < -l ? x + l : 0 (NaN stays NaN)
hlo::Value lower_softshrink(hlo::Builder& b, const hlo::Value& x, const hlo::Value& lambd);
// |x| <= l ? 0 : x
hlo::Value lower_hardshrink(hlo::Builder& b, const hlo::Value& x, const hlo::Value& lambd);
// |x| <= l ? 0 : grad (both shrinks)
hlo::Value lower_shrink_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                 const hlo::Value& lambd, ElementType out);

}  // namespace torch_tpu::ops
