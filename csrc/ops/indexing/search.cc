#include "ops/indexing/search.h"

#include "ops/broadcast.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

namespace {

hlo::Value s64_splat(hlo::Builder& b, int64_t v, const std::vector<int64_t>& dims) {
  return b.constant_splat_int(v, hlo::TensorType(ElementType::kS64, dims));
}

// flat[positions] for a 1-D `flat` and s64 positions of any shape.
hlo::Value take_flat(hlo::Builder& b, const hlo::Value& flat, const hlo::Value& positions) {
  std::vector<int64_t> column = positions.dims();
  column.push_back(1);
  hlo::GatherDims g;
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = positions.rank();
  return b.gather(flat, b.reshape(positions, column), g, {1});
}

}  // namespace

hlo::Value lower_searchsorted(hlo::Builder& b, const hlo::Value& sorted, const hlo::Value& values, bool right,
                              const std::optional<hlo::Value>& sorter, ElementType compare_type,
                              ElementType out) {
  const std::vector<int64_t>& vdims = values.dims();
  const int64_t m = sorted.rank() == 0 ? 1 : sorted.dims().back();
  if (element_count(vdims) == 0 || m == 0) return b.constant_splat_int(0, hlo::TensorType(out, vdims));
  const hlo::Value flat = convert_to(b, b.reshape(sorted, {element_count(sorted.dims())}), compare_type);
  const hlo::Value v = convert_to(b, values, compare_type);
  std::optional<hlo::Value> order;
  if (sorter) order = convert_to(b, b.reshape(*sorter, {element_count(sorted.dims())}), ElementType::kS64);
  // Where each value's row starts in the flattened sequence.
  hlo::Value row_start = s64_splat(b, 0, vdims);
  if (sorted.rank() > 1) {
    // The row of each value: the linear number of its leading coordinates.
    int64_t stride = 1;
    hlo::Value row = s64_splat(b, 0, vdims);
    for (int64_t d = values.rank() - 2; d >= 0; --d) {
      row = b.add(row, b.multiply(b.iota(hlo::TensorType(ElementType::kS64, vdims), d), s64_splat(b, stride, vdims)));
      stride *= vdims[d];
    }
    row_start = b.multiply(row, s64_splat(b, m, vdims));
  }
  hlo::Value lo = s64_splat(b, 0, vdims);
  hlo::Value hi = s64_splat(b, m, vdims);
  int64_t steps = 0;
  while ((int64_t{1} << steps) <= m) ++steps;
  const hlo::Value one = s64_splat(b, 1, vdims);
  for (int64_t s = 0; s < steps; ++s) {
    const hlo::Value mid = b.divide(b.add(lo, hi), s64_splat(b, 2, vdims));
    const hlo::Value probe = b.clamp(b.constant_splat_int(0, hlo::TensorType::scalar(ElementType::kS64)), mid,
                                     b.constant_splat_int(m - 1, hlo::TensorType::scalar(ElementType::kS64)));
    hlo::Value at = b.add(row_start, probe);
    if (order) at = b.add(row_start, take_flat(b, *order, at));
    const hlo::Value x = take_flat(b, flat, at);
    // As CPU's bisection: a NaN value lands past every number.
    const hlo::Value go_right = b.not_(b.compare(x, v, right ? "GT" : "GE"));
    const hlo::Value active = b.compare(lo, hi, "LT");
    lo = b.select(b.and_(active, go_right), b.add(mid, one), lo);
    hi = b.select(b.and_(active, b.not_(go_right)), mid, hi);
  }
  return convert_to(b, lo, out);
}

}  // namespace torch_tpu::ops
