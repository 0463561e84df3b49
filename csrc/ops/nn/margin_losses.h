// Lowerings of the multi-class margin losses with their own ATen kernels:
// multi_margin_loss (one target class per sample) and
// multilabel_margin_loss (a -1-terminated list of target classes per
// sample), with their gradients, in CPU's formulas. Inputs are [N, C] (the
// glue views a 1-d input as [1, C]); 16-bit floats compute in f32.
#pragma once

#include <optional>

#include "hlo/builder.h"
#include "ops/nn/loss.h"

namespace torch_tpu::ops {

struct MarginLoss {
  hlo::Value loss;       // [N] (kNone) or 0-dim, the input's dtype
  hlo::Value is_target;  // multilabel only: [N, C], 1 where the class is a target
  hlo::Value violated;   // 0-dim i1: a target class outside [0, C)
};

// sum over i != y of max(0, margin - x[y] + x[i])^p * weight[y], over C.
MarginLoss lower_multi_margin_loss(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target, int64_t p,
                                   double margin, const std::optional<hlo::Value>& weight, LossReduction reduction);

hlo::Value lower_multi_margin_loss_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                            const hlo::Value& target, int64_t p, double margin,
                                            const std::optional<hlo::Value>& weight, LossReduction reduction);

// sum over target classes j and non-target classes i of
// max(0, 1 - (x[j] - x[i])), over C.
MarginLoss lower_multilabel_margin_loss(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                                        LossReduction reduction);

hlo::Value lower_multilabel_margin_loss_backward(hlo::Builder& b, const hlo::Value& grad_output,
                                                 const hlo::Value& self, const hlo::Value& target,
                                                 LossReduction reduction);

}  // namespace torch_tpu::ops
