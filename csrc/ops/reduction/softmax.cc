#include "ops/reduction/softmax.h"

#include <limits>

#include "ops/broadcast.h"
#include "ops/reduction/reduce.h"

namespace torch_tpu::ops {

namespace {

using hlo::Value;

// A 0-dim operand is handled as a 1-element vector.
Value as_vector(hlo::Builder& b, const Value& x) { return x.rank() == 0 ? b.reshape(x, {1}) : x; }

Value restore_rank(hlo::Builder& b, const Value& r, const Value& like) {
  return like.rank() == 0 ? b.reshape(r, {}) : r;
}

// reduce(x, kind) along `dim`, broadcast back to x's shape.
Value reduce_along(hlo::Builder& b, const Value& x, ReduceKind kind, int64_t dim) {
  Value kept = lower_reduce(b, x, kind, {dim}, /*keepdim=*/true, x.dtype(), x.dtype());
  return expand_kept(b, kept, x.dims());
}

}  // namespace

Value lower_softmax(hlo::Builder& b, const Value& x, int64_t dim, ElementType out) {
  Value in = convert_to(b, as_vector(b, x), accumulation_type(out));
  Value e = b.exponential(b.subtract(in, reduce_along(b, in, ReduceKind::kMax, dim)));
  Value r = b.divide(e, reduce_along(b, e, ReduceKind::kSum, dim));
  return restore_rank(b, convert_to(b, r, out), x);
}

Value lower_log_softmax(hlo::Builder& b, const Value& x, int64_t dim, ElementType out) {
  Value in = convert_to(b, as_vector(b, x), accumulation_type(out));
  Value shifted = b.subtract(in, reduce_along(b, in, ReduceKind::kMax, dim));
  Value log_sum = b.log(reduce_along(b, b.exponential(shifted), ReduceKind::kSum, dim));
  return restore_rank(b, convert_to(b, b.subtract(shifted, log_sum), out), x);
}

Value lower_softmax_backward(hlo::Builder& b, const Value& grad, const Value& output, int64_t dim,
                             ElementType out) {
  const ElementType acc = accumulation_type(out);
  Value g = convert_to(b, as_vector(b, grad), acc);
  Value y = convert_to(b, as_vector(b, output), acc);
  Value dot = reduce_along(b, b.multiply(g, y), ReduceKind::kSum, dim);
  return restore_rank(b, convert_to(b, b.multiply(y, b.subtract(g, dot)), out), grad);
}

Value lower_log_softmax_backward(hlo::Builder& b, const Value& grad, const Value& output, int64_t dim,
                                 ElementType out) {
  const ElementType acc = accumulation_type(out);
  Value g = convert_to(b, as_vector(b, grad), acc);
  Value y = convert_to(b, as_vector(b, output), acc);
  Value total = reduce_along(b, g, ReduceKind::kSum, dim);
  return restore_rank(b, convert_to(b, b.subtract(g, b.multiply(b.exponential(y), total)), out), grad);
}

Value lower_masked_softmax(hlo::Builder& b, const Value& x, const Value& mask, int64_t dim, ElementType out) {
  Value in = convert_to(b, as_vector(b, x), accumulation_type(out));
  const double inf = std::numeric_limits<double>::infinity();
  Value filled = b.select(as_vector(b, mask), b.constant_splat(-inf, in.type()), in);
  return restore_rank(b, lower_softmax(b, filled, dim, out), x);
}

Value lower_masked_softmax_backward(hlo::Builder& b, const Value& grad, const Value& output, const Value& mask,
                                    int64_t dim, ElementType out) {
  const ElementType acc = accumulation_type(out);
  Value m = as_vector(b, mask);
  Value g = convert_to(b, as_vector(b, grad), acc);
  Value y = convert_to(b, as_vector(b, output), acc);
  Value zero = b.constant_splat(0, g.type());
  Value dot = reduce_along(b, b.select(m, zero, b.multiply(g, y)), ReduceKind::kSum, dim);
  Value r = b.select(m, zero, b.multiply(y, b.subtract(g, dot)));
  return restore_rank(b, convert_to(b, r, out), grad);
}

}  // namespace torch_tpu::ops
