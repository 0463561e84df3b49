#include "ops/elementwise/arithmetic.h"

#include "ops/broadcast.h"
#include "ops/elementwise/binary_math.h"

namespace torch_tpu::ops {

namespace {

// Both operands in `type`, broadcast to their common shape.
std::pair<hlo::Value, hlo::Value> promote(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y,
                                          ElementType type, const char* op) {
  auto dims = broadcast_shapes(x.dims(), y.dims(), op);
  return {broadcast_to(b, convert_to(b, x, type), dims), broadcast_to(b, convert_to(b, y, type), dims)};
}

hlo::Value scaled(hlo::Builder& b, const hlo::Value& y, const std::optional<hlo::Value>& alpha) {
  if (!alpha) return y;
  hlo::Value a = broadcast_to(b, convert_to(b, *alpha, y.dtype()), y.dims());
  // alpha of a bool op is a logical and (PyTorch allows only True there)
  return y.dtype() == ElementType::kPred ? b.and_(y, a) : b.multiply(y, a);
}

}  // namespace

hlo::Value lower_add(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y,
                     const std::optional<hlo::Value>& alpha, ElementType out) {
  auto [l, r] = promote(b, x, y, out, "aten::add");
  r = scaled(b, r, alpha);
  return out == ElementType::kPred ? b.or_(l, r) : b.add(l, r);
}

hlo::Value lower_sub(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y,
                     const std::optional<hlo::Value>& alpha, ElementType out) {
  auto [l, r] = promote(b, x, y, out, "aten::sub");
  return b.subtract(l, scaled(b, r, alpha));
}

hlo::Value lower_mul(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out) {
  auto [l, r] = promote(b, x, y, out, "aten::mul");
  return out == ElementType::kPred ? b.and_(l, r) : b.multiply(l, r);
}

hlo::Value lower_div(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out,
                     RoundingMode mode) {
  auto [l, r] = promote(b, x, y, out, "aten::div");
  hlo::Value q = b.divide(l, r);  // integers: truncates toward zero, like C
  if (mode == RoundingMode::kTrue || mode == RoundingMode::kTrunc) {
    return (mode == RoundingMode::kTrunc && is_floating(out))
               ? b.select(b.compare(q, b.constant_splat_int(0, q.type()), "LT"), b.ceil(q), b.floor(q))
               : q;
  }
  // floor: PyTorch's algorithm (fmod-based for floats, so 1 // 0.1 is 9).
  return floor_divide_same_type(b, l, r);
}

hlo::Value lower_fill(hlo::Builder& b, const hlo::Value& value, const std::vector<int64_t>& dims,
                      ElementType out) {
  return b.broadcast_in_dim(convert_to(b, value, out), dims, {});
}

}  // namespace torch_tpu::ops
