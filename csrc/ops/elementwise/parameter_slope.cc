#include "ops/elementwise/parameter_slope.h"

#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

using hlo::Value;

FivePointStencil::FivePointStencil(hlo::Builder& b, const Value& a, const Value& h) : b_(b), a_(a), h_(h) {
  stacked_dims_ = a.dims();
  stacked_dims_.insert(stacked_dims_.begin(), 5);
  for (int64_t i = 0; i < a.rank(); ++i) lift_.push_back(i + 1);
  Value offsets = b.broadcast_in_dim(axis::float_vector(b, {0, 1, -1, 2, -2}, a.dtype()), stacked_dims_, {0});
  points_ = b.add(stack(a), b.multiply(offsets, stack(h)));
}

Value FivePointStencil::stack(const Value& v) const { return b_.broadcast_in_dim(v, stacked_dims_, lift_); }

Value FivePointStencil::row(const Value& stacked, int64_t r) const {
  std::vector<int64_t> start(stacked_dims_.size(), 0), limit = stacked_dims_, strides(stacked_dims_.size(), 1);
  start[0] = r;
  limit[0] = r + 1;
  return b_.reshape(b_.slice(stacked, start, limit, strides), a_.dims());
}

Value FivePointStencil::slope(const Value& f) const {
  auto fill = [&](double v) { return b_.constant_splat(v, a_.type()); };
  Value near = b_.subtract(row(f, 1), row(f, 2)), far = b_.subtract(row(f, 3), row(f, 4));
  return b_.divide(b_.subtract(b_.multiply(fill(8), near), far), b_.multiply(fill(12), h_));
}

}  // namespace torch_tpu::ops
