#include "ops/nn/batch_norm.h"

#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

// Every dimension but the channel one (1).
std::vector<int64_t> non_channel_dims(int64_t rank) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < rank; ++d) dims.push_back(d);
  return dims;
}

hlo::Value sum_over(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, dims, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

hlo::Value splat(hlo::Builder& b, double v, const hlo::Value& like) { return b.constant_splat(v, like.type()); }

// A per-channel value ([C]) spread over x's shape.
hlo::Value per_channel(hlo::Builder& b, const hlo::Value& c, const std::vector<int64_t>& dims) {
  return b.broadcast_in_dim(c, dims, {1});
}

int64_t count_per_channel(const hlo::Value& x) {
  int64_t n = 1;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != 1) n *= x.dims()[d];
  }
  return n;
}

// y = (x - mean) * invstd * weight + bias, in acc, all per channel.
hlo::Value normalize(hlo::Builder& b, const hlo::Value& xf, const hlo::Value& mean, const hlo::Value& invstd,
                     const std::optional<hlo::Value>& weight, const std::optional<hlo::Value>& bias) {
  const ElementType acc = xf.dtype();
  const auto& dims = xf.dims();
  // Fold weight into the scale and the mean into the shift: two ops per element.
  hlo::Value scale = weight ? b.multiply(invstd, convert_to(b, *weight, acc)) : invstd;
  hlo::Value shift = b.negate(b.multiply(mean, scale));
  if (bias) shift = b.add(shift, convert_to(b, *bias, acc));
  return b.add(b.multiply(xf, per_channel(b, scale, dims)), per_channel(b, shift, dims));
}

}  // namespace

BatchNormOutputs lower_batch_norm_training(hlo::Builder& b, const hlo::Value& x,
                                           const std::optional<hlo::Value>& weight,
                                           const std::optional<hlo::Value>& bias,
                                           const std::optional<hlo::Value>& running_mean,
                                           const std::optional<hlo::Value>& running_var,
                                           const std::optional<hlo::Value>& momentum, double eps,
                                           ElementType stat_type) {
  const ElementType acc = accumulation_type(x.dtype());
  const auto& dims = x.dims();
  const auto reduced = non_channel_dims(x.rank());
  const int64_t n = count_per_channel(x);
  hlo::Value xf = convert_to(b, x, acc);
  hlo::Value count = b.constant_splat(static_cast<double>(n), hlo::TensorType(acc, {dims[1]}));
  hlo::Value mean = b.divide(sum_over(b, xf, reduced), count);
  hlo::Value centered = b.subtract(xf, per_channel(b, mean, dims));
  hlo::Value var_sum = sum_over(b, b.multiply(centered, centered), reduced);
  hlo::Value invstd = b.rsqrt(b.add(b.divide(var_sum, count), splat(b, eps, count)));
  BatchNormOutputs r;
  r.out = convert_to(b, normalize(b, xf, mean, invstd, weight, bias), x.dtype());
  r.save_mean = convert_to(b, mean, stat_type);
  r.save_invstd = convert_to(b, invstd, stat_type);
  auto update = [&](const hlo::Value& running, const hlo::Value& batch) {
    const ElementType t = accumulation_type(running.dtype());
    hlo::Value m = b.broadcast_in_dim(convert_to(b, *momentum, t), running.dims(), {});
    hlo::Value keep = b.subtract(splat(b, 1, m), m);
    hlo::Value next = b.add(b.multiply(m, convert_to(b, batch, t)), b.multiply(keep, convert_to(b, running, t)));
    return convert_to(b, next, running.dtype());
  };
  if (running_mean) r.running_mean = update(*running_mean, mean);
  if (running_var) {
    // The unbiased variance: NaN for a single value per channel, as on CPU.
    hlo::Value unbiased = b.divide(var_sum, splat(b, static_cast<double>(n - 1), var_sum));
    r.running_var = update(*running_var, unbiased);
  }
  return r;
}

BatchNormOutputs lower_batch_norm_inference(hlo::Builder& b, const hlo::Value& x,
                                            const std::optional<hlo::Value>& weight,
                                            const std::optional<hlo::Value>& bias, const hlo::Value& running_mean,
                                            const hlo::Value& running_var, double eps) {
  const ElementType acc = accumulation_type(x.dtype());
  hlo::Value var = convert_to(b, running_var, acc);
  hlo::Value mean = convert_to(b, running_mean, acc);
  hlo::Value invstd = b.rsqrt(b.add(var, splat(b, eps, var)));
  hlo::Value y = normalize(b, convert_to(b, x, acc), mean, invstd, weight, bias);
  BatchNormOutputs r;
  r.out = convert_to(b, y, x.dtype());
  r.save_mean = mean;
  r.save_invstd = invstd;
  return r;
}

BatchNormGrads lower_batch_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                         const std::optional<hlo::Value>& weight, const hlo::Value& mean,
                                         const hlo::Value& var_or_invstd, bool training, double eps,
                                         bool want_input, bool want_weight, bool want_bias,
                                         ElementType weight_type, ElementType bias_type) {
  const ElementType acc = accumulation_type(x.dtype());
  const auto& dims = x.dims();
  const auto reduced = non_channel_dims(x.rank());
  const int64_t n = count_per_channel(x);
  hlo::Value dy = convert_to(b, grad_out, acc);
  hlo::Value m = convert_to(b, mean, acc);
  hlo::Value invstd = convert_to(b, var_or_invstd, acc);
  if (!training) invstd = b.rsqrt(b.add(invstd, splat(b, eps, invstd)));
  hlo::Value xhat = b.multiply(b.subtract(convert_to(b, x, acc), per_channel(b, m, dims)), per_channel(b, invstd, dims));
  BatchNormGrads grads;
  const bool need_sums = want_weight || (want_input && training);
  hlo::Value dy_sum = (need_sums || want_bias) ? sum_over(b, dy, reduced) : hlo::Value();
  hlo::Value dy_xhat_sum = need_sums ? sum_over(b, b.multiply(dy, xhat), reduced) : hlo::Value();
  if (want_input) {
    hlo::Value scale = weight ? b.multiply(invstd, convert_to(b, *weight, acc)) : invstd;
    hlo::Value dx;
    if (training && n > 0) {
      // dx = scale * (dy - mean(dy) - xhat * mean(dy * xhat)), means per channel.
      hlo::Value count = splat(b, static_cast<double>(n), dy_sum);
      hlo::Value dy_mean = per_channel(b, b.divide(dy_sum, count), dims);
      hlo::Value proj = per_channel(b, b.divide(dy_xhat_sum, count), dims);
      dx = b.subtract(b.subtract(dy, dy_mean), b.multiply(xhat, proj));
      dx = b.multiply(dx, per_channel(b, scale, dims));
    } else {
      dx = b.multiply(dy, per_channel(b, scale, dims));
    }
    grads.input = convert_to(b, dx, x.dtype());
  }
  if (want_weight) grads.weight = convert_to(b, dy_xhat_sum, weight_type);
  if (want_bias) grads.bias = convert_to(b, dy_sum, bias_type);
  return grads;
}

}  // namespace torch_tpu::ops
