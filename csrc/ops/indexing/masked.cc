#include "ops/indexing/masked.h"

#include "ops/broadcast.h"
#include "ops/reduction/scan.h"
#include "ops/reduction/sort.h"

namespace torch_tpu::ops {

namespace {

const hlo::TensorType kS64Scalar = hlo::TensorType::scalar(ElementType::kS64);

hlo::Value s64_const(hlo::Builder& b, int64_t v, const std::vector<int64_t>& dims = {}) {
  return b.constant_splat_int(v, hlo::TensorType(ElementType::kS64, dims));
}

hlo::Value nonzero_mask(hlo::Builder& b, const hlo::Value& x) {
  if (x.dtype() == ElementType::kPred) return x;
  return b.compare(x, b.constant_splat_int(0, x.type()), "NE");
}

hlo::Value flatten(hlo::Builder& b, const hlo::Value& x) { return b.reshape(x, {element_count(x.dims())}); }

// Scatters `values` [n] into a `size`-element vector of `init` at `slots`
// [n] (s64); slots equal to `size` are dropped (written to a spare slot).
hlo::Value scatter_to_slots(hlo::Builder& b, const hlo::Value& init_value, int64_t size, const hlo::Value& slots,
                            const hlo::Value& values, ScatterKind kind) {
  const int64_t n = element_count(values.dims());
  hlo::ScatterDims sd;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  const hlo::Value into = b.broadcast_in_dim(init_value, {size + 1}, {});
  const hlo::Value out = b.scatter({into}, b.reshape(slots, {n, 1}), {values}, sd,
                                   [kind](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                                     return std::vector<hlo::Value>{scatter_combine(rb, kind, a[0], a[1])};
                                   })[0];
  return b.slice(out, {0}, {size}, {1});
}

// The flat positions (s64 [count]) of the true elements of `mask` [n], in
// order; positions past `count` trues are dropped, missing ones are -1.
hlo::Value true_positions(hlo::Builder& b, const hlo::Value& mask, int64_t count) {
  const int64_t n = element_count(mask.dims());
  const hlo::Value slots = b.subtract(lower_cumsum(b, mask, 0, ElementType::kS64), s64_const(b, 1, {n}));
  const hlo::Value keep = b.and_(mask, b.compare(slots, s64_const(b, count, {n}), "LT"));
  const hlo::Value target = b.select(keep, slots, s64_const(b, count, {n}));
  return scatter_to_slots(b, s64_const(b, -1), count, target, b.iota(hlo::TensorType(ElementType::kS64, {n}), 0),
                          ScatterKind::kAssign);
}

hlo::Value gather_flat(hlo::Builder& b, const hlo::Value& flat, const hlo::Value& positions) {
  const int64_t k = element_count(positions.dims());
  hlo::GatherDims g;
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  return b.gather(flat, b.reshape(positions, {k, 1}), g, {1});
}

}  // namespace

hlo::Value lower_masked_fill(hlo::Builder& b, const hlo::Value& self, const hlo::Value& mask,
                             const hlo::Value& value, const std::vector<int64_t>& out_dims) {
  const hlo::Value fill = b.broadcast_in_dim(convert_to(b, value, self.dtype()), out_dims, {});
  return b.select(broadcast_to(b, mask, out_dims), fill, broadcast_to(b, self, out_dims));
}

Checked lower_masked_scatter(hlo::Builder& b, const hlo::Value& self, const hlo::Value& mask,
                             const hlo::Value& source) {
  const int64_t n = element_count(self.dims());
  const int64_t available = element_count(source.dims());
  if (n == 0) return {self, false_flag(b)};
  const hlo::Value m = flatten(b, broadcast_to(b, mask, self.dims()));
  const hlo::Value slots = b.subtract(lower_cumsum(b, m, 0, ElementType::kS64), s64_const(b, 1, {n}));
  const hlo::Value last = b.reshape(b.slice(slots, {n - 1}, {n}, {1}), {});
  const hlo::Value violated = b.compare(last, s64_const(b, available - 1), "GT");
  if (available == 0) return {self, violated};
  const hlo::Value at = b.clamp(s64_const(b, 0), slots, s64_const(b, available - 1));
  const hlo::Value taken = gather_flat(b, flatten(b, convert_to(b, source, self.dtype())), at);
  const hlo::Value out = b.select(m, taken, flatten(b, self));
  return {b.reshape(out, self.dims()), violated};
}

hlo::Value lower_count_nonzero(hlo::Builder& b, const hlo::Value& x) {
  const hlo::Value ones = b.convert(nonzero_mask(b, x), ElementType::kS64);
  if (ones.rank() == 0) return ones;
  std::vector<int64_t> all;
  for (int64_t d = 0; d < ones.rank(); ++d) all.push_back(d);
  return b.reduce({ones}, {s64_const(b, 0)}, all, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

hlo::Value lower_nonzero(hlo::Builder& b, const hlo::Value& x, int64_t count, const hlo::Value* fill) {
  const int64_t rank = x.rank();
  const int64_t n = element_count(x.dims());
  const std::vector<int64_t> out_dims{count, rank};
  if (count == 0 || rank == 0 || n == 0) {
    if (fill && count > 0 && rank > 0) return b.broadcast_in_dim(convert_to(b, *fill, ElementType::kS64), out_dims, {});
    return s64_const(b, 0, out_dims);
  }
  const hlo::Value pos = b.broadcast_in_dim(true_positions(b, flatten(b, nonzero_mask(b, x)), count), out_dims, {0});
  // Unravel the flat positions: column d is (pos / stride_d) % size_d.
  std::vector<int64_t> strides(rank, 1), sizes(rank);
  for (int64_t d = rank - 1; d > 0; --d) strides[d - 1] = strides[d] * x.dims()[d];
  for (int64_t d = 0; d < rank; ++d) sizes[d] = x.dims()[d];
  const hlo::Value stride = b.constant_bytes(strides.data(), strides.size() * 8, hlo::TensorType(ElementType::kS64, {rank}));
  const hlo::Value size = b.constant_bytes(sizes.data(), sizes.size() * 8, hlo::TensorType(ElementType::kS64, {rank}));
  hlo::Value coords = b.remainder(b.divide(pos, b.broadcast_in_dim(stride, out_dims, {1})),
                                  b.broadcast_in_dim(size, out_dims, {1}));
  if (fill) {
    const hlo::Value missing = b.compare(pos, s64_const(b, -1, out_dims), "EQ");
    coords = b.select(missing, b.broadcast_in_dim(convert_to(b, *fill, ElementType::kS64), out_dims, {}), coords);
  }
  return coords;
}

hlo::Value lower_masked_select(hlo::Builder& b, const hlo::Value& self, const hlo::Value& mask,
                               const std::vector<int64_t>& dims, int64_t count) {
  if (count == 0 || element_count(dims) == 0) return zeros_of(b, self.dtype(), {count});
  const hlo::Value pos = true_positions(b, flatten(b, broadcast_to(b, mask, dims)), count);
  return gather_flat(b, flatten(b, broadcast_to(b, self, dims)), pos);
}

std::vector<hlo::Value> lower_unique_groups(hlo::Builder& b, const hlo::Value& x, bool consecutive) {
  const int64_t n = element_count(x.dims());
  const hlo::Value flat = flatten(b, x);
  if (n == 0) return {flat, s64_const(b, 0, {0}), s64_const(b, 0, {0}), s64_const(b, 0)};
  hlo::Value sorted = flat;
  hlo::Value perm = b.iota(hlo::TensorType(ElementType::kS64, {n}), 0);
  if (!consecutive) std::tie(sorted, perm) = lower_sort(b, flat, 0, false);
  hlo::Value starts = b.constant_splat_int(1, hlo::TensorType(ElementType::kPred, {1}));
  if (n > 1) {
    const hlo::Value differs = b.compare(b.slice(sorted, {1}, {n}, {1}), b.slice(sorted, {0}, {n - 1}, {1}), "NE");
    starts = b.concatenate({starts, differs}, 0);
  }
  const hlo::Value group = b.subtract(lower_cumsum(b, starts, 0, ElementType::kS64), s64_const(b, 1, {n}));
  const hlo::Value count = b.add(b.reshape(b.slice(group, {n - 1}, {n}, {1}), {}), s64_const(b, 1));
  return {sorted, perm, group, count};
}

std::vector<hlo::Value> lower_unique_results(hlo::Builder& b, const hlo::Value& sorted, const hlo::Value& perm,
                                             const hlo::Value& group, int64_t count,
                                             const std::vector<int64_t>& inverse_dims) {
  const int64_t n = element_count(sorted.dims());
  if (n == 0) {
    return {zeros_of(b, sorted.dtype(), {0}), s64_const(b, 0, inverse_dims), s64_const(b, 0, {0})};
  }
  const hlo::Value values =
      scatter_to_slots(b, b.constant_splat_int(0, hlo::TensorType::scalar(sorted.dtype())), count, group, sorted,
                       ScatterKind::kAssign);
  const hlo::Value inverse = scatter_to_slots(b, s64_const(b, 0), n, perm, group, ScatterKind::kAssign);
  const hlo::Value counts =
      scatter_to_slots(b, s64_const(b, 0), count, group, s64_const(b, 1, {n}), ScatterKind::kSum);
  return {values, b.reshape(inverse, inverse_dims), counts};
}

std::vector<hlo::Value> lower_bincount_range(hlo::Builder& b, const hlo::Value& x) {
  const hlo::Value v = convert_to(b, x, ElementType::kS64);
  const hlo::Value top = b.reduce({v}, {s64_const(b, -1)}, {0}, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.maximum(a[0], a[1])};
  })[0];
  const hlo::Value negative = any_true(b, b.compare(v, s64_const(b, 0, v.dims()), "LT"));
  return {top, negative};
}

hlo::Value lower_bincount(hlo::Builder& b, const hlo::Value& x, const hlo::Value* weights, int64_t size,
                          ElementType out) {
  const int64_t n = element_count(x.dims());
  if (n == 0 || size == 0) return zeros_of(b, out, {size});
  const hlo::Value v = convert_to(b, x, ElementType::kS64);
  const hlo::Value slots = b.clamp(s64_const(b, 0), v, s64_const(b, size));
  const hlo::Value updates = weights ? convert_to(b, *weights, out) : b.constant_splat_int(1, hlo::TensorType(out, {n}));
  return scatter_to_slots(b, b.constant_splat_int(0, hlo::TensorType::scalar(out)), size, slots, updates,
                          ScatterKind::kSum);
}

}  // namespace torch_tpu::ops
