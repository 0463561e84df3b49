#include "ops/factory/ranges.h"

#include "ops/broadcast.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

ElementType arange_compute_type(ElementType out) {
  if (is_integer(out) || out == ElementType::kPred) return ElementType::kS64;
  return out == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32;
}

hlo::Value lower_arange(hlo::Builder& b, const hlo::Value& start, const hlo::Value& step, int64_t n,
                        ElementType out) {
  const hlo::TensorType type(start.dtype(), {n});
  hlo::Value i = b.iota(type, 0);
  hlo::Value v = b.add(b.broadcast_in_dim(start, {n}, {}),
                       b.multiply(i, b.broadcast_in_dim(step, {n}, {})));
  return convert_to(b, v, out);
}

namespace {

// The points in `step`'s type (real).
hlo::Value linspace_points(hlo::Builder& b, const hlo::Value& start, const hlo::Value& end, const hlo::Value& step,
                           int64_t n) {
  const hlo::TensorType type(step.dtype(), {n});
  if (n == 1) return b.broadcast_in_dim(start, {1}, {});
  hlo::Value i = b.iota(type, 0);
  hlo::Value s = b.broadcast_in_dim(start, {n}, {});
  hlo::Value e = b.broadcast_in_dim(end, {n}, {});
  hlo::Value h = b.broadcast_in_dim(step, {n}, {});
  hlo::Value from_start = b.add(s, b.multiply(h, i));
  hlo::Value left = b.subtract(b.constant_splat_int(n - 1, type), i);
  hlo::Value from_end = b.subtract(e, b.multiply(h, left));
  hlo::Value first_half = b.compare(i, b.constant_splat_int(n / 2, type), "LT");
  return b.select(first_half, from_start, from_end);
}

}  // namespace

hlo::Value lower_linspace(hlo::Builder& b, const hlo::Value& start, const hlo::Value& end, const hlo::Value& step,
                          int64_t n, ElementType out) {
  if (is_complex(step.dtype())) {
    // The real and imaginary parts step independently.
    return convert_to(b, b.complex(linspace_points(b, b.real(start), b.real(end), b.real(step), n),
                                   linspace_points(b, b.imag(start), b.imag(end), b.imag(step), n)), out);
  }
  return convert_to(b, linspace_points(b, start, end, step, n), out);
}

hlo::Value lower_logspace(hlo::Builder& b, const hlo::Value& exponents, const hlo::Value& base, ElementType out) {
  hlo::Value bases = b.broadcast_in_dim(base, exponents.dims(), {});
  return convert_to(b, lower_pow(b, bases, exponents, ElementType::kF64), out);
}

hlo::Value lower_eye(hlo::Builder& b, int64_t n, int64_t m, ElementType out) {
  const hlo::TensorType index(ElementType::kS64, {n, m});
  hlo::Value diagonal = b.compare(b.iota(index, 0), b.iota(index, 1), "EQ");
  return convert_to(b, diagonal, out);
}

}  // namespace torch_tpu::ops
