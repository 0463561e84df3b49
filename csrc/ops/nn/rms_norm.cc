#include "ops/nn/rms_norm.h"

#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

std::vector<int64_t> range(int64_t from, int64_t to) {
  std::vector<int64_t> out;
  for (int64_t d = from; d < to; ++d) out.push_back(d);
  return out;
}

hlo::Value sum_over(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, dims, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

// Per-row values (shape x.shape[:axis]) to x's shape.
hlo::Value rows_to(hlo::Builder& b, const hlo::Value& rows, const std::vector<int64_t>& dims) {
  return b.broadcast_in_dim(rows, dims, range(0, rows.rank()));
}

// Per-feature parameters (shape x.shape[axis:]) to x's shape.
hlo::Value features_to(hlo::Builder& b, const hlo::Value& p, const std::vector<int64_t>& dims) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  return b.broadcast_in_dim(p, dims, range(rank - p.rank(), rank));
}

int64_t features(const hlo::Value& x, int64_t axis) {
  int64_t n = 1;
  for (int64_t d = axis; d < x.rank(); ++d) n *= x.dims()[d];
  return n;
}

}  // namespace

RmsNormOutputs lower_rms_norm(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& weight,
                              int64_t axis, double eps) {
  const ElementType acc = accumulation_type(x.dtype());
  const auto& dims = x.dims();
  std::vector<int64_t> rows(dims.begin(), dims.begin() + axis);
  hlo::Value xf = convert_to(b, x, acc);
  // No features: the mean of nothing is NaN, as on CPU.
  hlo::Value ms = b.divide(sum_over(b, b.multiply(xf, xf), range(axis, x.rank())),
                           b.constant_splat(static_cast<double>(features(x, axis)), hlo::TensorType(acc, rows)));
  hlo::Value rstd = b.rsqrt(b.add(ms, b.constant_splat(eps, ms.type())));
  hlo::Value y = b.multiply(xf, rows_to(b, rstd, dims));
  if (weight) y = b.multiply(y, features_to(b, convert_to(b, *weight, acc), dims));
  std::vector<int64_t> kept = rows;
  kept.resize(dims.size(), 1);
  return {convert_to(b, y, x.dtype()), b.reshape(rstd, kept)};
}

RmsNormGrads lower_rms_norm_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& x,
                                     const hlo::Value& rstd, const std::optional<hlo::Value>& weight, int64_t axis,
                                     bool want_input, bool want_weight, ElementType weight_type) {
  const ElementType acc = accumulation_type(x.dtype());
  const auto& dims = x.dims();
  std::vector<int64_t> rows(dims.begin(), dims.begin() + axis);
  const int64_t n = features(x, axis);
  hlo::Value dy = convert_to(b, grad_out, acc);
  hlo::Value r = rows_to(b, b.reshape(convert_to(b, rstd, acc), rows), dims);
  hlo::Value xhat = b.multiply(convert_to(b, x, acc), r);
  RmsNormGrads grads;
  if (want_input) {
    hlo::Value g = weight ? b.multiply(dy, features_to(b, convert_to(b, *weight, acc), dims)) : dy;
    hlo::Value dx = g;
    if (n > 0) {
      // dx = rstd * (g - xhat * mean(g * xhat)), the mean over a row.
      hlo::Value proj = b.divide(sum_over(b, b.multiply(g, xhat), range(axis, x.rank())),
                                 b.constant_splat(static_cast<double>(n), hlo::TensorType(acc, rows)));
      dx = b.multiply(r, b.subtract(g, b.multiply(xhat, rows_to(b, proj, dims))));
    }
    grads.input = convert_to(b, dx, x.dtype());
  }
  if (want_weight) grads.weight = convert_to(b, sum_over(b, b.multiply(dy, xhat), range(0, axis)), weight_type);
  return grads;
}

}  // namespace torch_tpu::ops
