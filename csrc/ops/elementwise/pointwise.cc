#include "ops/elementwise/pointwise.h"

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

// All operands in `type`, broadcast to their common shape.
std::vector<hlo::Value> promote_all(hlo::Builder& b, std::vector<hlo::Value> xs, ElementType type,
                                    const char* op) {
  std::vector<int64_t> dims;
  for (const auto& x : xs) dims = broadcast_shapes(dims, x.dims(), op);
  for (auto& x : xs) x = broadcast_to(b, convert_to(b, x, type), dims);
  return xs;
}

}  // namespace

hlo::Value lower_lerp(hlo::Builder& b, const hlo::Value& self, const hlo::Value& end,
                      const hlo::Value& weight, ElementType out) {
  auto v = promote_all(b, {self, end, weight}, out, "aten::lerp");
  // PyTorch's formula: weight < 0.5 ? self + w * (end - self)
  //                                  : end - (end - self) * (1 - w)
  // keeps lerp(a, b, 1) == b exactly.
  hlo::Value diff = b.subtract(v[1], v[0]);
  hlo::Value one = b.constant_splat(1.0, v[2].type());
  hlo::Value low = b.add(v[0], b.multiply(v[2], diff));
  hlo::Value high = b.subtract(v[1], b.multiply(diff, b.subtract(one, v[2])));
  hlo::Value magnitude = b.abs(v[2]);  // real for a complex weight
  hlo::Value weight_small = b.compare(magnitude, b.constant_splat(0.5, magnitude.type()), "LT");
  return b.select(weight_small, low, high);
}

hlo::Value lower_addcmul(hlo::Builder& b, const hlo::Value& self, const hlo::Value& t1,
                         const hlo::Value& t2, const hlo::Value& value, ElementType out) {
  auto v = promote_all(b, {self, t1, t2, value}, out, "aten::addcmul");
  // value * t1 first, as CPU and CUDA compute it (t1 * t2 alone can overflow).
  return b.add(v[0], b.multiply(b.multiply(v[3], v[1]), v[2]));
}

hlo::Value lower_addcdiv(hlo::Builder& b, const hlo::Value& self, const hlo::Value& t1,
                         const hlo::Value& t2, const hlo::Value& value, ElementType out) {
  auto v = promote_all(b, {self, t1, t2, value}, out, "aten::addcdiv");
  // value * t1 first, as CPU and CUDA compute it.
  return b.add(v[0], b.divide(b.multiply(v[3], v[1]), v[2]));
}

hlo::Value lower_maximum(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out) {
  auto v = promote_all(b, {x, y}, out, "aten::maximum");
  return out == ElementType::kPred ? b.or_(v[0], v[1]) : b.maximum(v[0], v[1]);
}

hlo::Value lower_minimum(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out) {
  auto v = promote_all(b, {x, y}, out, "aten::minimum");
  return out == ElementType::kPred ? b.and_(v[0], v[1]) : b.minimum(v[0], v[1]);
}

}  // namespace torch_tpu::ops
