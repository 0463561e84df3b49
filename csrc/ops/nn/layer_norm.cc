#include "ops/nn/layer_norm.h"

#include <cmath>
#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

ElementType compute_type(ElementType t) {
  return t == ElementType::kBF16 || t == ElementType::kF16 ? ElementType::kF32 : t;
}

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t d = from; d < to; ++d) out.push_back(d);
  return out;
}

hlo::Value sum_over(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, dims, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

hlo::Value scalar(hlo::Builder& b, double v, ElementType type, const std::vector<int64_t>& dims) {
  return b.constant_splat(v, hlo::TensorType(type, dims));
}

// Per-row statistics (shape x.shape[:axis]) back to x's shape.
hlo::Value rows_to(hlo::Builder& b, const hlo::Value& rows, const std::vector<int64_t>& dims) {
  return b.broadcast_in_dim(rows, dims, range(0, rows.rank()));
}

// Per-feature parameters (shape x.shape[axis:]) to x's shape.
hlo::Value features_to(hlo::Builder& b, const hlo::Value& p, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  return b.broadcast_in_dim(p, dims, range(rank - p.rank(), rank));
}

// The mean over dims[axis:] as a per-row value; n is their element count.
hlo::Value row_mean(hlo::Builder& b, const hlo::Value& x, int64_t axis, int64_t n) {
  hlo::Value s = sum_over(b, x, range(axis, x.rank()));
  return b.divide(s, scalar(b, static_cast<double>(n), x.dtype(), s.dims()));
}

std::vector<int64_t> kept_shape(const std::vector<int64_t>& dims, int64_t axis) {
  std::vector<int64_t> out(dims.begin(), dims.begin() + axis);
  out.resize(dims.size(), 1);
  return out;
}

}  // namespace

LayerNormOutputs lower_layer_norm(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& weight,
                                  const std::optional<hlo::Value>& bias, int64_t axis, double eps,
                                  ElementType stat_type) {
  const ElementType acc = compute_type(x.dtype());
  const auto& dims = x.dims();
  int64_t n = 1;
  for (int64_t d = axis; d < x.rank(); ++d) n *= dims[d];
  hlo::Value xf = convert_to(b, x, acc);
  std::vector<int64_t> rows(dims.begin(), dims.begin() + axis);
  // An empty row has mean 0 (and a NaN rstd), as on CPU.
  hlo::Value mean = n == 0 ? scalar(b, 0, acc, rows) : row_mean(b, xf, axis, n);
  hlo::Value centered = b.subtract(xf, rows_to(b, mean, dims));
  hlo::Value var = n == 0 ? scalar(b, std::nan(""), acc, rows) : row_mean(b, b.multiply(centered, centered), axis, n);
  hlo::Value rstd = b.rsqrt(b.add(var, scalar(b, eps, acc, rows)));
  hlo::Value y = b.multiply(centered, rows_to(b, rstd, dims));
  if (weight) y = b.multiply(y, features_to(b, convert_to(b, *weight, acc), dims));
  if (bias) y = b.add(y, features_to(b, convert_to(b, *bias, acc), dims));
  const auto kept = kept_shape(dims, axis);
  return {convert_to(b, y, x.dtype()), convert_to(b, b.reshape(mean, kept), stat_type),
          convert_to(b, b.reshape(rstd, kept), stat_type)};
}

LayerNormGrads lower_layer_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                         const hlo::Value& mean, const hlo::Value& rstd,
                                         const std::optional<hlo::Value>& weight, int64_t axis,
                                         bool want_input, bool want_weight, bool want_bias,
                                         ElementType weight_type, ElementType bias_type) {
  const ElementType acc = compute_type(x.dtype());
  const auto& dims = x.dims();
  std::vector<int64_t> rows(dims.begin(), dims.begin() + axis);
  int64_t n = 1;
  for (int64_t d = axis; d < x.rank(); ++d) n *= dims[d];
  hlo::Value dy = convert_to(b, grad_out, acc);
  hlo::Value r = rows_to(b, b.reshape(convert_to(b, rstd, acc), rows), dims);
  hlo::Value m = rows_to(b, b.reshape(convert_to(b, mean, acc), rows), dims);
  hlo::Value xhat = b.multiply(b.subtract(convert_to(b, x, acc), m), r);
  LayerNormGrads grads;
  if (want_input) {
    hlo::Value g = weight ? b.multiply(dy, features_to(b, convert_to(b, *weight, acc), dims)) : dy;
    if (n == 0) {
      grads.input = convert_to(b, g, x.dtype());
    } else {
      // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)), means over a row.
      hlo::Value g_mean = rows_to(b, row_mean(b, g, axis, n), dims);
      hlo::Value gx_mean = rows_to(b, row_mean(b, b.multiply(g, xhat), axis, n), dims);
      hlo::Value dx = b.multiply(r, b.subtract(b.subtract(g, g_mean), b.multiply(xhat, gx_mean)));
      grads.input = convert_to(b, dx, x.dtype());
    }
  }
  const auto leading = range(0, axis);
  if (want_weight) grads.weight = convert_to(b, sum_over(b, b.multiply(dy, xhat), leading), weight_type);
  if (want_bias) grads.bias = convert_to(b, sum_over(b, dy, leading), bias_type);
  return grads;
}

}  // namespace torch_tpu::ops
