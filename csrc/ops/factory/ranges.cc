#include "ops/factory/ranges.h"

#include "ops/broadcast.h"

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

hlo::Value lower_linspace(hlo::Builder& b, const hlo::Value& start, const hlo::Value& end, int64_t n,
                          ElementType out) {
  const ElementType t = start.dtype();
  if (is_complex(t)) {
    // The real and imaginary parts step independently.
    const ElementType part = real_part_type(t);
    return convert_to(b, b.complex(lower_linspace(b, b.real(start), b.real(end), n, part),
                                   lower_linspace(b, b.imag(start), b.imag(end), n, part)), out);
  }
  const hlo::TensorType type(t, {n});
  if (n == 1) return convert_to(b, b.broadcast_in_dim(start, {1}, {}), out);
  hlo::Value i = b.iota(type, 0);
  hlo::Value s = b.broadcast_in_dim(start, {n}, {});
  hlo::Value e = b.broadcast_in_dim(end, {n}, {});
  hlo::Value steps = b.constant_splat_int(n - 1, type);
  hlo::Value step = b.divide(b.subtract(e, s), steps);
  hlo::Value from_start = b.add(s, b.multiply(i, step));
  hlo::Value from_end = b.subtract(e, b.multiply(b.subtract(steps, i), step));
  hlo::Value first_half = b.compare(i, b.constant_splat_int(n / 2, type), "LT");
  return convert_to(b, b.select(first_half, from_start, from_end), out);
}

hlo::Value lower_eye(hlo::Builder& b, int64_t n, int64_t m, ElementType out) {
  const hlo::TensorType index(ElementType::kS64, {n, m});
  hlo::Value diagonal = b.compare(b.iota(index, 0), b.iota(index, 1), "EQ");
  return convert_to(b, diagonal, out);
}

}  // namespace torch_tpu::ops
