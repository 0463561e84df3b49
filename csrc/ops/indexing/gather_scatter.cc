#include "ops/indexing/gather_scatter.h"

#include <limits>

#include "ops/broadcast.h"
#include "ops/elementwise/arithmetic.h"

namespace torch_tpu::ops {

namespace {

const hlo::TensorType kPredScalar = hlo::TensorType::scalar(ElementType::kPred);

// The largest (or lowest) value of `t` as a tensor of `dims`; +-inf for floats.
hlo::Value extreme(hlo::Builder& b, ElementType t, bool largest, const std::vector<int64_t>& dims) {
  const hlo::TensorType type(t, dims);
  if (t == ElementType::kPred) return b.constant_splat_int(largest ? 1 : 0, type);
  if (is_floating(t)) {
    return b.constant_splat(largest ? std::numeric_limits<double>::infinity()
                                    : -std::numeric_limits<double>::infinity(),
                            type);
  }
  const int bits = static_cast<int>(element_size(t) * 8);
  if (is_unsigned(t)) {
    if (!largest) return b.constant_splat_int(0, type);
    return b.constant_splat_uint(bits == 64 ? std::numeric_limits<uint64_t>::max() : (uint64_t{1} << bits) - 1,
                                 type);
  }
  const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return b.constant_splat_int(largest ? max : -max - 1, type);
}

hlo::Value identity_of(hlo::Builder& b, ScatterKind kind, ElementType t, const std::vector<int64_t>& dims) {
  switch (kind) {
    case ScatterKind::kProd: return b.constant_splat_int(1, hlo::TensorType(t, dims));
    case ScatterKind::kMax: return extreme(b, t, false, dims);
    case ScatterKind::kMin: return extreme(b, t, true, dims);
    default: return zeros_of(b, t, dims);
  }
}

// index (any shape, s64) reshaped to index.dims + [1].
hlo::Value as_index_column(hlo::Builder& b, const hlo::Value& index) {
  std::vector<int64_t> dims = index.dims();
  dims.push_back(1);
  return b.reshape(index, dims);
}

// Full coordinates (index.dims + [rank]) into an operand of index's rank:
// `index` along `dim`, the element's own position along every other one.
hlo::Value coordinates_along(hlo::Builder& b, const hlo::Value& index, int64_t dim) {
  std::vector<hlo::Value> columns;
  const hlo::TensorType s64(ElementType::kS64, index.dims());
  for (int64_t d = 0; d < index.rank(); ++d) {
    columns.push_back(as_index_column(b, d == dim ? index : b.iota(s64, d)));
  }
  return b.concatenate(columns, index.rank());
}

hlo::GatherDims point_gather_dims(int64_t rank) {
  hlo::GatherDims g;
  for (int64_t d = 0; d < rank; ++d) {
    g.collapsed_slice_dims.push_back(d);
    g.start_index_map.push_back(d);
  }
  g.index_vector_dim = rank;
  return g;
}

hlo::ScatterDims point_scatter_dims(int64_t rank) {
  hlo::ScatterDims s;
  for (int64_t d = 0; d < rank; ++d) {
    s.inserted_window_dims.push_back(d);
    s.scatter_dims_to_operand_dims.push_back(d);
  }
  s.index_vector_dim = rank;
  return s;
}

hlo::Value scatter_with(hlo::Builder& b, const hlo::Value& into, const hlo::Value& coords,
                        const hlo::Value& updates, const hlo::ScatterDims& dims, ScatterKind kind) {
  return b.scatter({into}, coords, {updates}, dims,
                   [kind](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                     return std::vector<hlo::Value>{scatter_combine(rb, kind, a[0], a[1])};
                   })[0];
}

// Gather / scatter dimension numbers for whole slices along `dim` picked by
// a [n, 1] index: the picked dimension becomes (or comes from) size n.
hlo::GatherDims slice_gather_dims(int64_t rank, int64_t dim) {
  hlo::GatherDims g;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim) g.offset_dims.push_back(d);
  }
  g.collapsed_slice_dims = {dim};
  g.start_index_map = {dim};
  g.index_vector_dim = 1;
  return g;
}

hlo::ScatterDims slice_scatter_dims(int64_t rank, int64_t dim) {
  hlo::ScatterDims s;
  for (int64_t d = 0; d < rank; ++d) {
    if (d != dim) s.update_window_dims.push_back(d);
  }
  s.inserted_window_dims = {dim};
  s.scatter_dims_to_operand_dims = {dim};
  s.index_vector_dim = 1;
  return s;
}

bool has_zero(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d == 0) return true;
  }
  return false;
}

}  // namespace

// ---- shared helpers --------------------------------------------------------

int64_t element_count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

hlo::Value zeros_of(hlo::Builder& b, ElementType type, const std::vector<int64_t>& dims) {
  return b.constant_splat(0, hlo::TensorType(type, dims));
}

hlo::Value false_flag(hlo::Builder& b) { return b.constant_splat_int(0, kPredScalar); }

hlo::Value any_true(hlo::Builder& b, const hlo::Value& pred) {
  if (pred.rank() == 0) return pred;
  std::vector<int64_t> all;
  for (int64_t d = 0; d < pred.rank(); ++d) all.push_back(d);
  return b.reduce({pred}, {false_flag(b)}, all, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.or_(a[0], a[1])};
  })[0];
}

hlo::Value all_true(hlo::Builder& b, const hlo::Value& pred) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < pred.rank(); ++d) dims.push_back(d);
  return b.reduce({pred}, {b.constant_splat_int(1, hlo::TensorType::scalar(ElementType::kPred))}, dims,
                  [](hlo::Builder& r, const std::vector<hlo::Value>& v) {
                    return std::vector<hlo::Value>{r.and_(v[0], v[1])};
                  })[0];
}

hlo::Value or_flags(hlo::Builder& b, const std::vector<hlo::Value>& flags) {
  if (flags.empty()) return false_flag(b);
  hlo::Value f = flags[0];
  for (size_t i = 1; i < flags.size(); ++i) f = b.or_(f, flags[i]);
  return f;
}

hlo::Value index_out_of_range(hlo::Builder& b, const hlo::Value& index, int64_t size, bool allow_negative) {
  if (element_count(index.dims()) == 0) return false_flag(b);
  const hlo::Value i = convert_to(b, index, ElementType::kS64);
  const hlo::Value low = b.constant_splat_int(allow_negative ? -size : 0, i.type());
  const hlo::Value high = b.constant_splat_int(size, i.type());
  return any_true(b, b.or_(b.compare(i, low, "LT"), b.compare(i, high, "GE")));
}

hlo::Value wrap_index(hlo::Builder& b, const hlo::Value& index, int64_t size) {
  const hlo::Value i = convert_to(b, index, ElementType::kS64);
  const hlo::Value negative = b.compare(i, b.constant_splat_int(0, i.type()), "LT");
  return b.select(negative, b.add(i, b.constant_splat_int(size, i.type())), i);
}

hlo::Value scatter_combine(hlo::Builder& b, ScatterKind kind, const hlo::Value& current, const hlo::Value& update) {
  const bool pred = current.dtype() == ElementType::kPred;
  switch (kind) {
    case ScatterKind::kAssign: return update;
    case ScatterKind::kSum:
    case ScatterKind::kMean: return pred ? b.or_(current, update) : b.add(current, update);
    case ScatterKind::kProd: return pred ? b.and_(current, update) : b.multiply(current, update);
    case ScatterKind::kMax: return pred ? b.or_(current, update) : b.maximum(current, update);
    case ScatterKind::kMin: return pred ? b.and_(current, update) : b.minimum(current, update);
  }
  return update;
}

// ---- along one dimension ------------------------------------------------------

Checked lower_gather(hlo::Builder& b, const hlo::Value& self_in, const hlo::Value& index_in, int64_t dim) {
  const std::vector<int64_t> out_dims = index_in.dims();
  const bool scalar = self_in.rank() == 0;
  const hlo::Value self = scalar ? b.reshape(self_in, {1}) : self_in;
  const hlo::Value index = index_in.rank() == 0 ? b.reshape(index_in, std::vector<int64_t>(self.rank(), 1)) : index_in;
  const hlo::Value violated = index_out_of_range(b, index, self.dims()[dim], false);
  if (element_count(out_dims) == 0 || has_zero(self.dims())) {
    return {zeros_of(b, self.dtype(), out_dims), violated};
  }
  const hlo::Value coords = coordinates_along(b, convert_to(b, index, ElementType::kS64), dim);
  const hlo::Value picked =
      b.gather(self, coords, point_gather_dims(self.rank()), std::vector<int64_t>(self.rank(), 1));
  return {b.reshape(picked, out_dims), violated};
}

Checked lower_scatter(hlo::Builder& b, const hlo::Value& self_in, const hlo::Value& index_in, const hlo::Value& src_in,
                      int64_t dim, ScatterKind kind, bool include_self) {
  const bool scalar = self_in.rank() == 0;
  const hlo::Value self = scalar ? b.reshape(self_in, {1}) : self_in;
  const int64_t rank = self.rank();
  hlo::Value index = index_in.rank() == 0 && rank > 0 ? b.reshape(index_in, std::vector<int64_t>(rank, 1)) : index_in;
  const hlo::Value violated = index_out_of_range(b, index, self.dims()[dim], false);
  if (element_count(index.dims()) == 0) return {self_in, violated};
  const ElementType result_type = self.dtype();
  // Sums and means of 16-bit floats accumulate in f32 and round once, as
  // CPU's accumulating kernels do (rounding at every addition lost digits).
  const bool widen = (kind == ScatterKind::kSum || kind == ScatterKind::kMean) &&
                     accumulation_type(result_type) != result_type && is_floating(result_type);
  const ElementType type = widen ? accumulation_type(result_type) : result_type;

  hlo::Value updates;
  if (src_in.rank() == 0) {
    updates = b.broadcast_in_dim(convert_to(b, src_in, type), index.dims(), {});
  } else {
    hlo::Value src = src_in.rank() == rank ? src_in : b.reshape(src_in, std::vector<int64_t>(rank, 1));
    if (src.dims() != index.dims()) {
      src = b.slice(src, std::vector<int64_t>(rank, 0), index.dims(), std::vector<int64_t>(rank, 1));
    }
    updates = convert_to(b, src, type);
  }
  const hlo::Value coords = coordinates_along(b, convert_to(b, index, ElementType::kS64), dim);
  const hlo::ScatterDims sd = point_scatter_dims(rank);

  hlo::Value base = convert_to(b, self, type);
  if (!include_self && kind != ScatterKind::kAssign) {
    const hlo::Value touched = scatter_with(b, b.constant_splat_int(0, hlo::TensorType(ElementType::kPred, self.dims())),
                                            coords, b.constant_splat_int(1, hlo::TensorType(ElementType::kPred, index.dims())),
                                            sd, ScatterKind::kAssign);
    base = b.select(touched, identity_of(b, kind, type, self.dims()), base);
  }
  hlo::Value out = scatter_with(b, base, coords, updates, sd, kind);
  if (kind == ScatterKind::kMean) {
    const ElementType count_type = type == ElementType::kPred ? ElementType::kS64 : type;
    const hlo::TensorType ct(count_type, self.dims());
    hlo::Value counts = scatter_with(b, b.constant_splat_int(include_self ? 1 : 0, ct), coords,
                                     b.constant_splat_int(1, hlo::TensorType(count_type, index.dims())), sd,
                                     ScatterKind::kSum);
    counts = b.maximum(counts, b.constant_splat_int(1, ct));
    out = lower_div(b, convert_to(b, out, count_type), counts, count_type,
                    is_floating(count_type) || is_complex(count_type) ? RoundingMode::kTrue : RoundingMode::kFloor);
    out = convert_to(b, out, type);
  }
  out = convert_to(b, out, result_type);
  return {scalar ? b.reshape(out, {}) : out, violated};
}

// ---- whole slices along one dimension -------------------------------------------

Checked lower_index_select(hlo::Builder& b, const hlo::Value& self_in, const hlo::Value& index, int64_t dim) {
  const bool scalar = self_in.rank() == 0;
  const hlo::Value self = scalar ? b.reshape(self_in, {1}) : self_in;
  const int64_t n = element_count(index.dims());
  const hlo::Value violated = index_out_of_range(b, index, self.dims()[dim], false);
  std::vector<int64_t> out_dims = self.dims();
  out_dims[dim] = n;
  hlo::Value out;
  if (element_count(out_dims) == 0 || has_zero(self.dims())) {
    out = zeros_of(b, self.dtype(), out_dims);
  } else {
    std::vector<int64_t> slice = self.dims();
    slice[dim] = 1;
    const hlo::Value rows = b.reshape(convert_to(b, index, ElementType::kS64), {n, 1});
    out = b.gather(self, rows, slice_gather_dims(self.rank(), dim), slice);
  }
  return {scalar ? b.reshape(out, {}) : out, violated};
}

Checked lower_index_update(hlo::Builder& b, const hlo::Value& self_in, const hlo::Value& index,
                           const hlo::Value& source_in, int64_t dim, ScatterKind kind,
                           const std::optional<hlo::Value>& alpha) {
  const bool scalar = self_in.rank() == 0;
  const hlo::Value self = scalar ? b.reshape(self_in, {1}) : self_in;
  const int64_t n = element_count(index.dims());
  std::vector<int64_t> update_dims = self.dims();
  update_dims[dim] = n;
  // As CPU, no index is checked when no element is updated.
  if (element_count(update_dims) == 0) return {self_in, false_flag(b)};
  const hlo::Value violated = index_out_of_range(b, index, self.dims()[dim], false);
  // index_add of 16-bit floats accumulates in f32 and rounds once (as lower_scatter).
  const ElementType type = kind == ScatterKind::kSum && is_floating(self.dtype())
                               ? accumulation_type(self.dtype()) : self.dtype();
  hlo::Value source = b.reshape(convert_to(b, source_in, type), update_dims);
  if (alpha) {
    const hlo::Value a = b.broadcast_in_dim(convert_to(b, *alpha, type), update_dims, {});
    source = type == ElementType::kPred ? b.and_(source, a) : b.multiply(source, a);
  }
  const hlo::Value rows = b.reshape(convert_to(b, index, ElementType::kS64), {n, 1});
  const hlo::Value out = convert_to(
      b, scatter_with(b, convert_to(b, self, type), rows, source, slice_scatter_dims(self.rank(), dim), kind),
      self.dtype());
  return {scalar ? b.reshape(out, {}) : out, violated};
}

Checked lower_index_fill(hlo::Builder& b, const hlo::Value& self_in, const hlo::Value& index,
                         const hlo::Value& value, int64_t dim) {
  const bool scalar = self_in.rank() == 0;
  const hlo::Value self = scalar ? b.reshape(self_in, {1}) : self_in;
  const int64_t size = self.dims()[dim];
  const int64_t n = element_count(index.dims());
  if (n == 0 || element_count(self.dims()) == 0) return {self_in, false_flag(b)};  // CPU checks nothing then
  const hlo::Value violated = index_out_of_range(b, index, size, true);
  // Which positions along `dim` are filled, then a select.
  const hlo::Value rows = b.reshape(wrap_index(b, index, size), {n, 1});
  hlo::ScatterDims sd;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  const hlo::Value picked =
      scatter_with(b, b.constant_splat_int(0, hlo::TensorType(ElementType::kPred, {size})), rows,
                   b.constant_splat_int(1, hlo::TensorType(ElementType::kPred, {n})), sd, ScatterKind::kAssign);
  const hlo::Value mask = b.broadcast_in_dim(picked, self.dims(), {dim});
  const hlo::Value fill = b.broadcast_in_dim(convert_to(b, value, self.dtype()), self.dims(), {});
  const hlo::Value out = b.select(mask, fill, self);
  return {scalar ? b.reshape(out, {}) : out, violated};
}

// ---- through the flattened tensor -----------------------------------------------

Checked lower_take(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index) {
  const int64_t total = element_count(self.dims());
  const hlo::Value violated = index_out_of_range(b, index, total, true);
  if (element_count(index.dims()) == 0 || total == 0) return {zeros_of(b, self.dtype(), index.dims()), violated};
  const hlo::Value flat = b.reshape(self, {total});
  const hlo::Value coords = as_index_column(b, wrap_index(b, index, total));
  hlo::GatherDims g = point_gather_dims(1);
  g.index_vector_dim = index.rank();
  return {b.gather(flat, coords, g, {1}), violated};
}

Checked lower_put(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index, const hlo::Value& source,
                  bool accumulate) {
  const int64_t total = element_count(self.dims());
  const int64_t n = element_count(index.dims());
  const hlo::Value violated = index_out_of_range(b, index, total, true);
  if (n == 0) return {self, violated};
  const hlo::Value flat = b.reshape(self, {total});
  const hlo::Value rows = b.reshape(wrap_index(b, index, total), {n, 1});
  const hlo::Value updates = b.reshape(convert_to(b, source, self.dtype()), {n});
  const hlo::Value out = scatter_with(b, flat, rows, updates, point_scatter_dims(1),
                                      accumulate ? ScatterKind::kSum : ScatterKind::kAssign);
  return {b.reshape(out, self.dims()), violated};
}

}  // namespace torch_tpu::ops
