// Lowerings of the activation functions and their backward ops. Float
// activations compute bf16 / f16 in f32 and round once, as PyTorch's CPU
// kernels do; the result has the dtype of `x` (forward) or `out` (backward).
// Scalars (threshold, slope, beta, bounds) are 0-dim values so they can be
// runtime inputs.
#pragma once

#include <cstdint>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// max(x, 0); NaN stays NaN.
hlo::Value lower_relu(hlo::Builder& b, const hlo::Value& x);
// x <= threshold ? value : x
hlo::Value lower_threshold(hlo::Builder& b, const hlo::Value& x, const hlo::Value& threshold,
                           const hlo::Value& value);
// x <= threshold ? 0 : grad, in `out` (relu's backward).
hlo::Value lower_threshold_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                    const hlo::Value& threshold, ElementType out);

enum class GeluApproximation : uint8_t { kNone, kTanh };
hlo::Value lower_gelu(hlo::Builder& b, const hlo::Value& x, GeluApproximation approximate);
hlo::Value lower_gelu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                               GeluApproximation approximate, ElementType out);

// x * sigmoid(x)
hlo::Value lower_silu(hlo::Builder& b, const hlo::Value& x);
hlo::Value lower_silu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x, ElementType out);
// grad * (1 - y) * y, from the forward's output y.
hlo::Value lower_sigmoid_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& y,
                                  ElementType out);
// grad * (1 - y * y), from the forward's output y.
hlo::Value lower_tanh_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& y, ElementType out);

// x > 0 ? x : x * slope
hlo::Value lower_leaky_relu(hlo::Builder& b, const hlo::Value& x, const hlo::Value& slope);
// x > 0 ? grad : grad * slope
hlo::Value lower_leaky_relu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                     const hlo::Value& slope, ElementType out);

// (x <= lo || x >= hi) ? 0 : grad
hlo::Value lower_hardtanh_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                   const hlo::Value& lo, const hlo::Value& hi, ElementType out);

// x * beta > threshold ? x : log1p(exp(x * beta)) / beta
hlo::Value lower_softplus(hlo::Builder& b, const hlo::Value& x, const hlo::Value& beta,
                          const hlo::Value& threshold);
hlo::Value lower_softplus_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                   const hlo::Value& beta, const hlo::Value& threshold, ElementType out);

}  // namespace torch_tpu::ops
