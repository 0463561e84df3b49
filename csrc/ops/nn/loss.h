// Lowerings of the losses: negative log likelihood (nll_loss, nll_loss2d)
// and mean squared error, with their gradients. 16-bit floats are computed
// in f32 and rounded once at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// at::Reduction's values.
enum class LossReduction : int64_t { kNone = 0, kMean = 1, kSum = 2 };

struct NllLossOutputs {
  hlo::Value output;        // per target element (kNone, batched input) or 0-dim
  hlo::Value total_weight;  // 0-dim: the summed weights of the counted targets
};

// self: [C] with a 0-dim target, or [N, C, d1, ...] with target
// [N, d1, ...]; classes run along dim 1 (dim 0 for a 1-D input). weight:
// [C]. Targets equal to ignore_index count for nothing; other targets
// outside [0, C) are not checked (that needs the values on the host) and
// count for nothing too.
NllLossOutputs lower_nll_loss(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                              const std::optional<hlo::Value>& weight, LossReduction reduction,
                              int64_t ignore_index);

// The gradient with respect to self (self's shape and dtype).
hlo::Value lower_nll_loss_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                   const hlo::Value& target, const std::optional<hlo::Value>& weight,
                                   LossReduction reduction, int64_t ignore_index, const hlo::Value& total_weight);

// (self - target)^2, broadcast, reduced; in `out` (a float type).
hlo::Value lower_mse_loss(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                          LossReduction reduction, ElementType out);

// norm * (self - target) * grad_output over the broadcast shape of all
// three, in `out`; norm is 2 / mean_count for kMean, else 2.
hlo::Value lower_mse_loss_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                   const hlo::Value& target, LossReduction reduction, int64_t mean_count,
                                   ElementType out);

}  // namespace torch_tpu::ops
