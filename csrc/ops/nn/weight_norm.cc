#include "ops/nn/weight_norm.h"

#include <vector>

#include "ops/broadcast.h"
#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

namespace {

using hlo::Value;

// Sum over every dim of x but `dim`: [x.dims()[dim]].
Value sum_except(hlo::Builder& b, const Value& x, int64_t dim) {
  std::vector<int64_t> reduce;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != dim) reduce.push_back(d);
  }
  Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, reduce, axis::add).at(0);
}

// A per-slice vector [n] (or any shape of n elements) along `dim` of dims.
Value along_dim(hlo::Builder& b, const Value& per_slice, const std::vector<int64_t>& dims, int64_t dim) {
  return b.broadcast_in_dim(b.reshape(per_slice, {dims[dim]}), dims, {dim});
}

}  // namespace

WeightNorm lower_weight_norm(hlo::Builder& b, const Value& v, const Value& g, int64_t dim) {
  const ElementType acc = accumulation_type(v.dtype());
  Value vv = convert_to(b, v, acc);
  Value norm = b.sqrt(sum_except(b, b.multiply(vv, vv), dim));
  Value scale = b.divide(convert_to(b, b.reshape(g, {v.dims()[dim]}), acc), norm);
  Value w = b.multiply(vv, along_dim(b, scale, v.dims(), dim));
  return {convert_to(b, w, v.dtype()), b.reshape(norm, g.dims())};
}

WeightNormGrads lower_weight_norm_backward(hlo::Builder& b, const Value& grad_w, const Value& v, const Value& g,
                                           const Value& norms, int64_t dim) {
  // With s = sum(grad_w * v) per slice: dg = s / norm, dv = g / norm *
  // (grad_w - v s / norm^2).
  const ElementType acc = accumulation_type(v.dtype());
  const int64_t n = v.dims()[dim];
  Value vv = convert_to(b, v, acc), gw = convert_to(b, grad_w, acc);
  Value norm = convert_to(b, b.reshape(norms, {n}), acc);
  Value gg = convert_to(b, b.reshape(g, {n}), acc);
  Value s = sum_except(b, b.multiply(gw, vv), dim);
  Value grad_g = b.divide(s, norm);
  Value projection = b.divide(s, b.multiply(norm, norm));
  Value inner = b.subtract(gw, b.multiply(vv, along_dim(b, projection, v.dims(), dim)));
  Value grad_v = b.multiply(inner, along_dim(b, b.divide(gg, norm), v.dims(), dim));
  return {convert_to(b, grad_v, v.dtype()), convert_to(b, b.reshape(grad_g, g.dims()), g.dtype())};
}

}  // namespace torch_tpu::ops
