// Lowerings of the pointwise losses with their own ATen kernels: binary
// cross entropy, smooth L1 and Huber, with their gradients. (nll_loss and
// mse_loss are in loss.h; cross_entropy, l1_loss, kl_div, soft_margin_loss,
// poisson_nll_loss and the margin losses
// are composite in ATen.) 16-bit floats are computed in f32 and rounded once
// at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"
#include "ops/nn/loss.h"

namespace torch_tpu::ops {

struct BinaryCrossEntropyOutputs {
  hlo::Value loss;      // self's shape (kNone) or 0-dim, self's dtype
  hlo::Value violated;         // 0-dim i1: some input outside [0, 1] (or NaN)
  hlo::Value target_violated;  // 0-dim i1: the same of the target, when the input is fine
};

// -weight * (target * log(self) + (1 - target) * log(1 - self)), each log
// clamped to >= -100 as CPU does; target has self's shape, weight
// broadcasts to it.
BinaryCrossEntropyOutputs lower_binary_cross_entropy(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                                                     const std::optional<hlo::Value>& weight, LossReduction reduction);

// grad * weight * (self - target) / max(self * (1 - self), 1e-12), divided
// by self's element count for kMean.
hlo::Value lower_binary_cross_entropy_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                               const hlo::Value& target, const std::optional<hlo::Value>& weight,
                                               LossReduction reduction);

// (1 - target) * self - (1 + (pos_weight - 1) * target) * log_sigmoid(self),
// times weight; target, weight and pos_weight broadcast to self's shape.
hlo::Value lower_binary_cross_entropy_with_logits(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                                                  const std::optional<hlo::Value>& weight,
                                                  const std::optional<hlo::Value>& pos_weight,
                                                  LossReduction reduction);

// Which of the two piecewise losses: smooth L1 (|d| < beta: 0.5 d^2 / beta,
// else |d| - 0.5 beta) or Huber (|d| < delta: 0.5 d^2, else
// delta * (|d| - 0.5 delta)). `param` (beta or delta) is a 0-dim value of
// the computation type, a runtime scalar.
enum class PiecewiseLoss : char { kSmoothL1 = 's', kHuber = 'h' };

// self and target broadcast; the result is in `out`.
hlo::Value lower_piecewise_loss(hlo::Builder& b, PiecewiseLoss kind, const hlo::Value& self, const hlo::Value& target,
                                const hlo::Value& param, LossReduction reduction, ElementType out);

// The gradient with respect to self over the broadcast shape of all three
// operands, in `out`; kMean divides by mean_count.
hlo::Value lower_piecewise_loss_backward(hlo::Builder& b, PiecewiseLoss kind, const hlo::Value& grad_output,
                                         const hlo::Value& self, const hlo::Value& target, const hlo::Value& param,
                                         LossReduction reduction, int64_t mean_count, ElementType out);

}  // namespace torch_tpu::ops
