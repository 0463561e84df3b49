#include "ops/nn/group_norm.h"

#include <cmath>
#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

hlo::Value sum_over(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, dims, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

hlo::Value splat(hlo::Builder& b, double v, const hlo::Value& like) { return b.constant_splat(v, like.type()); }

// Views of the input: [N, G, D] for the statistics, [N, C, HxW] for the
// per-channel parameters.
struct Views {
  std::vector<int64_t> grouped, channels;
  int64_t d;
};

Views views(const GroupNormShape& s) {
  const int64_t per_group = s.groups > 0 ? s.c / s.groups : 0;
  return {{s.n, s.groups, per_group * s.hxw}, {s.n, s.c, s.hxw}, per_group * s.hxw};
}

// [N, G] statistics over the grouped view.
hlo::Value per_group(hlo::Builder& b, const hlo::Value& stat, const std::vector<int64_t>& grouped) {
  return b.broadcast_in_dim(stat, grouped, {0, 1});
}

// A [C] parameter over the channel view.
hlo::Value per_channel(hlo::Builder& b, const hlo::Value& p, const std::vector<int64_t>& channels) {
  return b.broadcast_in_dim(p, channels, {1});
}

}  // namespace

GroupNormOutputs lower_group_norm(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& weight,
                                  const std::optional<hlo::Value>& bias, const GroupNormShape& shape, double eps,
                                  ElementType stat_type) {
  const ElementType acc = accumulation_type(x.dtype());
  const Views v = views(shape);
  hlo::Value xg = b.reshape(convert_to(b, x, acc), v.grouped);
  const std::vector<int64_t> stats{shape.n, shape.groups};
  hlo::Value mean, var;
  if (v.d == 0) {  // an empty group: mean 0 and a NaN rstd, as on CPU
    mean = b.constant_splat(0, hlo::TensorType(acc, stats));
    var = b.constant_splat(std::nan(""), hlo::TensorType(acc, stats));
  } else {
    hlo::Value count = b.constant_splat(static_cast<double>(v.d), hlo::TensorType(acc, stats));
    mean = b.divide(sum_over(b, xg, {2}), count);
    hlo::Value centered = b.subtract(xg, per_group(b, mean, v.grouped));
    var = b.divide(sum_over(b, b.multiply(centered, centered), {2}), count);
  }
  hlo::Value rstd = b.rsqrt(b.add(var, splat(b, eps, var)));
  hlo::Value y = b.multiply(b.subtract(xg, per_group(b, mean, v.grouped)), per_group(b, rstd, v.grouped));
  y = b.reshape(y, v.channels);
  if (weight) y = b.multiply(y, per_channel(b, convert_to(b, *weight, acc), v.channels));
  if (bias) y = b.add(y, per_channel(b, convert_to(b, *bias, acc), v.channels));
  return {convert_to(b, b.reshape(y, x.dims()), x.dtype()), convert_to(b, mean, stat_type),
          convert_to(b, rstd, stat_type)};
}

GroupNormGrads lower_group_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                         const hlo::Value& mean, const hlo::Value& rstd,
                                         const std::optional<hlo::Value>& weight, const GroupNormShape& shape,
                                         bool want_input, bool want_weight, bool want_bias,
                                         ElementType weight_type, ElementType bias_type) {
  const ElementType acc = accumulation_type(x.dtype());
  const Views v = views(shape);
  const std::vector<int64_t> stats{shape.n, shape.groups};
  hlo::Value m = per_group(b, convert_to(b, b.reshape(mean, stats), acc), v.grouped);
  hlo::Value r = per_group(b, convert_to(b, b.reshape(rstd, stats), acc), v.grouped);
  hlo::Value xhat = b.multiply(b.subtract(b.reshape(convert_to(b, x, acc), v.grouped), m), r);
  hlo::Value dy = b.reshape(convert_to(b, grad_out, acc), v.channels);
  GroupNormGrads grads;
  if (want_input) {
    hlo::Value g = weight ? b.multiply(dy, per_channel(b, convert_to(b, *weight, acc), v.channels)) : dy;
    g = b.reshape(g, v.grouped);
    hlo::Value dx = g;
    if (v.d > 0) {
      // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), means over a group.
      hlo::Value count = b.constant_splat(static_cast<double>(v.d), hlo::TensorType(acc, {shape.n, shape.groups}));
      hlo::Value g_mean = per_group(b, b.divide(sum_over(b, g, {2}), count), v.grouped);
      hlo::Value gx_mean = per_group(b, b.divide(sum_over(b, b.multiply(g, xhat), {2}), count), v.grouped);
      dx = b.multiply(r, b.subtract(b.subtract(g, g_mean), b.multiply(xhat, gx_mean)));
    }
    grads.input = convert_to(b, b.reshape(dx, x.dims()), x.dtype());
  }
  if (want_weight) {
    hlo::Value prod = b.multiply(dy, b.reshape(xhat, v.channels));
    grads.weight = convert_to(b, sum_over(b, prod, {0, 2}), weight_type);
  }
  if (want_bias) grads.bias = convert_to(b, sum_over(b, dy, {0, 2}), bias_type);
  return grads;
}

}  // namespace torch_tpu::ops
