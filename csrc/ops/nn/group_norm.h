// Lowerings of group normalization and its gradient.
//
// The input holds N * C * HxW elements (any shape [N, C, ...]); the C
// channels split into `groups` groups, and each (sample, group) is
// normalized over its (C / groups) * HxW elements; weight and bias are per
// channel. 16-bit floats are computed in f32 and rounded once at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct GroupNormShape {
  int64_t n, c, hxw, groups;
};

struct GroupNormOutputs {
  hlo::Value out;   // x's dtype and shape
  hlo::Value mean;  // [N, groups], stat_type
  hlo::Value rstd;  // [N, groups], stat_type: 1 / sqrt(biased variance + eps)
};

GroupNormOutputs lower_group_norm(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& weight,
                                  const std::optional<hlo::Value>& bias, const GroupNormShape& shape, double eps,
                                  ElementType stat_type);

struct GroupNormGrads {
  std::optional<hlo::Value> input, weight, bias;
};

// The gradients asked for, from the forward's mean and rstd: input in x's
// dtype, weight in weight_type, bias in bias_type ([C] each).
GroupNormGrads lower_group_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                         const hlo::Value& mean, const hlo::Value& rstd,
                                         const std::optional<hlo::Value>& weight, const GroupNormShape& shape,
                                         bool want_input, bool want_weight, bool want_bias,
                                         ElementType weight_type, ElementType bias_type);

}  // namespace torch_tpu::ops
