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

}  // namespace torch_tpu::ops
