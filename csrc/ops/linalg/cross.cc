#include "ops/linalg/cross.h"

#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

hlo::Value component(hlo::Builder& b, const hlo::Value& x, int64_t dim, int64_t i) {
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  starts[dim] = i;
  limits[dim] = i + 1;
  return b.slice(x, starts, limits, strides);
}

}  // namespace

hlo::Value lower_cross(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, int64_t dim, ElementType out) {
  if (x.rank() != y.rank()) throw hlo::HloError("linalg_cross: operands differ in rank");
  if (dim < 0 || dim >= x.rank() || x.dims()[dim] != 3 || y.dims()[dim] != 3) {
    throw hlo::HloError("linalg_cross: dimension of size 3 expected");
  }
  const std::vector<int64_t> shape = broadcast_shapes(x.dims(), y.dims(), "aten::linalg_cross");
  hlo::Value a = broadcast_to(b, convert_to(b, x, out), shape);
  hlo::Value c = broadcast_to(b, convert_to(b, y, out), shape);
  hlo::Value a0 = component(b, a, dim, 0), a1 = component(b, a, dim, 1), a2 = component(b, a, dim, 2);
  hlo::Value c0 = component(b, c, dim, 0), c1 = component(b, c, dim, 1), c2 = component(b, c, dim, 2);
  return b.concatenate({b.subtract(b.multiply(a1, c2), b.multiply(a2, c1)),
                        b.subtract(b.multiply(a2, c0), b.multiply(a0, c2)),
                        b.subtract(b.multiply(a0, c1), b.multiply(a1, c0))},
                       dim);
}

}  // namespace torch_tpu::ops
