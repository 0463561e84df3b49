#include "ops/shape/triangular.h"

namespace torch_tpu::ops {

hlo::Value lower_triangular(hlo::Builder& b, const hlo::Value& x, int64_t diagonal, bool upper) {
  const int64_t r = x.rank();
  if (r < 2) throw hlo::HloError("triu/tril: input must have at least 2 dimensions, got " + x.type().to_string());
  const int64_t rows = x.dims()[r - 2], cols = x.dims()[r - 1];
  const hlo::TensorType grid(ElementType::kS64, {rows, cols});
  // col - row against the diagonal, on the [rows, cols] grid only.
  hlo::Value offset = b.subtract(b.iota(grid, 1), b.iota(grid, 0));
  hlo::Value keep = b.compare(offset, b.constant_splat_int(diagonal, grid), upper ? "GE" : "LE");
  keep = b.broadcast_in_dim(keep, x.dims(), {r - 2, r - 1});
  return b.select(keep, x, b.constant_splat_int(0, x.type()));
}

}  // namespace torch_tpu::ops
