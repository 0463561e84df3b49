// Lowerings of layer normalization and its gradient.
//
// The input is normalized over its trailing dimensions, from `axis` on.
// 16-bit floats are computed in f32 and rounded once at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct LayerNormOutputs {
  hlo::Value out;   // x's dtype and shape
  hlo::Value mean;  // x.shape[:axis] + [1] * (rank - axis), in stat_type
  hlo::Value rstd;  // 1 / sqrt(biased variance + eps), like mean
};

// weight and bias (optional) have shape x.shape[axis:].
LayerNormOutputs lower_layer_norm(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& weight,
                                  const std::optional<hlo::Value>& bias, int64_t axis, double eps,
                                  ElementType stat_type);

struct LayerNormGrads {
  std::optional<hlo::Value> input, weight, bias;
};

// The gradients asked for, from the forward's saved mean and rstd: input
// in x's dtype, weight in weight_type, bias in bias_type.
LayerNormGrads lower_layer_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                         const hlo::Value& mean, const hlo::Value& rstd,
                                         const std::optional<hlo::Value>& weight, int64_t axis,
                                         bool want_input, bool want_weight, bool want_bias,
                                         ElementType weight_type, ElementType bias_type);

}  // namespace torch_tpu::ops
