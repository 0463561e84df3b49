// Lowerings of RMS normalization (aten::_fused_rms_norm, which F.rms_norm
// reaches when the weight's dtype is the input's) and its gradient.
//
// The input is normalized over its trailing dimensions, from `axis` on, by
// its root mean square. 16-bit floats are computed in f32 and rounded once
// at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct RmsNormOutputs {
  hlo::Value out;   // x's dtype and shape
  hlo::Value rstd;  // x.shape[:axis] + [1] * (rank - axis), in x's accumulation type
};

// weight (optional) has shape x.shape[axis:].
RmsNormOutputs lower_rms_norm(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& weight,
                              int64_t axis, double eps);

struct RmsNormGrads {
  std::optional<hlo::Value> input, weight;
};

// The gradients asked for, from the forward's rstd: input in x's dtype,
// weight in weight_type.
RmsNormGrads lower_rms_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                     const hlo::Value& rstd, const std::optional<hlo::Value>& weight, int64_t axis,
                                     bool want_input, bool want_weight, ElementType weight_type);

}  // namespace torch_tpu::ops
