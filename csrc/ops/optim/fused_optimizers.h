// Lowerings of the fused optimizer steps (_fused_adam_, _fused_adamw_,
// _fused_sgd_, _fused_adagrad_): one parameter's update, written so the
// ATen glue can put every parameter of a call in one program. Tensors are
// computed in their accumulation type (f32 for bf16 / f16) and returned in
// that type; the destinations round them once. Scalars are 0-dim values
// (runtime inputs, so a changing learning rate never recompiles).
//
// As on CPU and CUDA: `grad_scale` divides the gradient (and the unscaled
// gradient is written back), and a nonzero `found_inf` leaves every tensor
// unchanged.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct AmpInputs {
  std::optional<hlo::Value> grad_scale;  // 0-dim
  std::optional<hlo::Value> found_inf;   // 0-dim
};

struct AdamOptions {
  bool amsgrad = false;
  bool maximize = false;
  bool decoupled_weight_decay = false;  // AdamW
  bool weight_decay = false;            // weight_decay != 0
};

struct AdamScalars {
  hlo::Value lr, beta1, beta2, weight_decay, eps;
};

// Updated values, in order: param, grad, exp_avg, exp_avg_sq[, max_exp_avg_sq].
std::vector<hlo::Value> lower_adam_step(hlo::Builder& b, const AdamOptions& o, const AdamScalars& s,
                                        const AmpInputs& amp, const hlo::Value& param, const hlo::Value& grad,
                                        const hlo::Value& exp_avg, const hlo::Value& exp_avg_sq,
                                        const std::optional<hlo::Value>& max_exp_avg_sq, const hlo::Value& step);

struct SgdOptions {
  bool maximize = false;
  bool nesterov = false;
  bool weight_decay = false;  // weight_decay != 0
  bool momentum = false;      // momentum != 0
  bool first_step = false;    // the momentum buffer starts as the gradient
};

struct SgdScalars {
  hlo::Value lr, weight_decay, momentum, dampening;
};

// Updated values: param, grad[, momentum_buffer].
std::vector<hlo::Value> lower_sgd_step(hlo::Builder& b, const SgdOptions& o, const SgdScalars& s,
                                       const AmpInputs& amp, const hlo::Value& param, const hlo::Value& grad,
                                       const std::optional<hlo::Value>& momentum_buffer);

struct AdagradOptions {
  bool maximize = false;
  bool weight_decay = false;
};

struct AdagradScalars {
  hlo::Value lr, lr_decay, weight_decay, eps;
};

// Updated values: param, grad, state_sum. `step` was already incremented.
std::vector<hlo::Value> lower_adagrad_step(hlo::Builder& b, const AdagradOptions& o, const AdagradScalars& s,
                                           const AmpInputs& amp, const hlo::Value& param, const hlo::Value& grad,
                                           const hlo::Value& state_sum, const hlo::Value& step);

}  // namespace torch_tpu::ops
