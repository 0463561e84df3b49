#include "ops/optim/foreach.h"

#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/elementwise/arithmetic.h"
#include "ops/elementwise/compare.h"
#include "ops/elementwise/pointwise.h"
#include "ops/reduction/reduce.h"

namespace torch_tpu::ops {

ElementType foreach_compute_type(ForeachOp op, ElementType out) {
  switch (op) {
    // Bounds are rounded to the tensor's type, as CPU's clamp does; a copy
    // converts once.
    case ForeachOp::kClampMin:
    case ForeachOp::kClampMax:
    case ForeachOp::kCopy:
    case ForeachOp::kUnary: return out;
    default: return elementwise_compute_type(out);
  }
}

hlo::Value lower_foreach_element(hlo::Builder& b, ForeachOp op, UnaryOp unary, const std::vector<hlo::Value>& a,
                                 ElementType out) {
  const ElementType c = foreach_compute_type(op, out);
  auto alpha = [&](size_t i) -> std::optional<hlo::Value> {
    if (a.size() > i) return a[i];
    return std::nullopt;
  };
  hlo::Value r;
  switch (op) {
    case ForeachOp::kAdd: r = lower_add(b, a.at(0), a.at(1), alpha(2), c); break;
    case ForeachOp::kSub: r = lower_sub(b, a.at(0), a.at(1), alpha(2), c); break;
    case ForeachOp::kMul: r = lower_mul(b, a.at(0), a.at(1), c); break;
    case ForeachOp::kDiv: r = lower_div(b, a.at(0), a.at(1), c, RoundingMode::kTrue); break;
    case ForeachOp::kAddcmul: r = lower_addcmul(b, a.at(0), a.at(1), a.at(2), a.at(3), c); break;
    case ForeachOp::kAddcdiv: r = lower_addcdiv(b, a.at(0), a.at(1), a.at(2), a.at(3), c); break;
    case ForeachOp::kLerp: r = lower_lerp(b, a.at(0), a.at(1), a.at(2), c); break;
    case ForeachOp::kClampMin: r = lower_clamp(b, a.at(0), a.at(1), std::nullopt, c); break;
    case ForeachOp::kClampMax: r = lower_clamp(b, a.at(0), std::nullopt, a.at(1), c); break;
    case ForeachOp::kPow: r = lower_pow(b, a.at(0), a.at(1), out); break;
    case ForeachOp::kCopy: r = a.at(0); break;
    case ForeachOp::kUnary: r = lower_unary(b, unary, a.at(0), out); break;
  }
  return convert_to(b, r, out);
}

hlo::Value lower_vector_norm(hlo::Builder& b, const hlo::Value& input, double ord, ElementType out) {
  std::vector<int64_t> dims(input.dims().size());
  for (size_t i = 0; i < dims.size(); ++i) dims[i] = static_cast<int64_t>(i);
  return lower_vector_norm(b, input, ord, dims, false, out);
}

hlo::Value lower_vector_norm(hlo::Builder& b, const hlo::Value& input, double ord, const std::vector<int64_t>& dims,
                             bool keepdim, ElementType out) {
  const ElementType acc = accumulation_type(out);
  hlo::Value x = convert_to(b, convert_to(b, input, out), acc);
  auto sum = [&](const hlo::Value& v) { return lower_reduce(b, v, ReduceKind::kSum, dims, keepdim, acc, acc); };
  hlo::Value r;
  if (std::isinf(ord)) {
    r = lower_reduce(b, b.abs(x), ord > 0 ? ReduceKind::kMax : ReduceKind::kMin, dims, keepdim, acc, acc);
  } else if (ord == 2) {
    r = b.sqrt(sum(b.multiply(x, x)));
  } else if (ord == 1) {
    r = sum(b.abs(x));
  } else if (ord == 0) {
    hlo::Value nonzero = b.compare(x, b.constant_splat(0, x.type()), "NE");
    r = sum(b.convert(nonzero, acc));
  } else {
    hlo::Value p = b.constant_splat(ord, x.type());
    hlo::Value s = sum(b.power(b.abs(x), p));
    r = b.power(s, b.constant_splat(1.0 / ord, s.type()));
  }
  return convert_to(b, r, out);
}

}  // namespace torch_tpu::ops
