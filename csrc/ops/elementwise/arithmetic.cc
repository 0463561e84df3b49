#include "ops/elementwise/arithmetic.h"

#include "ops/broadcast.h"

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
  if (is_floating(out)) return b.floor(q);
  // Integer floor division: step down when the signs differ and it is inexact.
  hlo::Value zero = b.constant_splat_int(0, q.type());
  hlo::Value inexact = b.compare(b.multiply(q, r), l, "NE");
  hlo::Value signs_differ = b.compare(b.compare(l, zero, "LT"), b.compare(r, zero, "LT"), "NE");
  hlo::Value adjust = b.and_(inexact, signs_differ);
  return b.select(adjust, b.subtract(q, b.constant_splat_int(1, q.type())), q);
}

hlo::Value lower_fill(hlo::Builder& b, const hlo::Value& value, const std::vector<int64_t>& dims,
                      ElementType out) {
  return b.broadcast_in_dim(convert_to(b, value, out), dims, {});
}

}  // namespace torch_tpu::ops
