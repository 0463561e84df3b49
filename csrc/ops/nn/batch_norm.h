// Lowerings of batch normalization and its gradient.
//
// Channels run along dimension 1 of an input of rank >= 2; statistics are
// taken over every other dimension. 16-bit floats are computed in f32 and
// rounded once at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct BatchNormOutputs {
  hlo::Value out;          // x's dtype and shape
  hlo::Value save_mean;    // [C], stat_type: the batch mean
  hlo::Value save_invstd;  // [C], stat_type: 1 / sqrt(biased batch variance + eps)
  // The running statistics after the update (each in its own dtype), when
  // they were given: momentum * batch + (1 - momentum) * running, with the
  // unbiased batch variance, as CPU updates them.
  std::optional<hlo::Value> running_mean, running_var;
};

// Training: normalizes with the batch statistics. weight, bias and the
// running statistics have shape [C]; momentum is a 0-dim float value
// (a runtime scalar, so a changing momentum does not recompile).
BatchNormOutputs lower_batch_norm_training(hlo::Builder& b, const hlo::Value& x,
                                           const std::optional<hlo::Value>& weight,
                                           const std::optional<hlo::Value>& bias,
                                           const std::optional<hlo::Value>& running_mean,
                                           const std::optional<hlo::Value>& running_var,
                                           const std::optional<hlo::Value>& momentum, double eps,
                                           ElementType stat_type);

// Inference: normalizes with the running statistics. The saved statistics
// are the running mean and 1 / sqrt(running variance + eps) in x's
// accumulation type, as PyTorch's shape function gives an accelerator
// (CUDA's kernel returns them; CPU's returns empty ones).
BatchNormOutputs lower_batch_norm_inference(hlo::Builder& b, const hlo::Value& x,
                                            const std::optional<hlo::Value>& weight,
                                            const std::optional<hlo::Value>& bias, const hlo::Value& running_mean,
                                            const hlo::Value& running_var, double eps);

struct BatchNormGrads {
  std::optional<hlo::Value> input, weight, bias;
};

// The gradients asked for. Training: `mean` and `invstd` are the forward's
// saved statistics and the batch statistics depend on x. Inference: `mean`
// is the running mean and `var_or_invstd` the running variance (eps is added
// here). Input in x's dtype, weight in weight_type, bias in bias_type.
BatchNormGrads lower_batch_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                         const std::optional<hlo::Value>& weight, const hlo::Value& mean,
                                         const hlo::Value& var_or_invstd, bool training, double eps,
                                         bool want_input, bool want_weight, bool want_bias,
                                         ElementType weight_type, ElementType bias_type);

}  // namespace torch_tpu::ops
