#include "ops/reduction/segment_reduce.h"

#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/nn/embedding.h"
#include "ops/reduction/scan.h"

namespace torch_tpu::ops {

namespace {

constexpr ElementType kIndex = ElementType::kS64;
constexpr double kInf = std::numeric_limits<double>::infinity();

// The data viewed as [outer, n, inner] around the reduced axis, and the
// segment count.
struct Layout {
  int64_t outer = 1, n = 0, inner = 1, segments = 0;
  std::vector<int64_t> out_dims;  // the data's dims with the axis replaced by segments
};

Layout layout_of(const hlo::Value& data, const hlo::Value& bounds, SegmentBounds given, int64_t axis) {
  Layout l;
  const auto& dims = data.dims();
  for (int64_t d = 0; d < axis; ++d) l.outer *= dims[d];
  for (size_t d = axis + 1; d < dims.size(); ++d) l.inner *= dims[d];
  l.n = dims[axis];
  l.segments = bounds.dims().back() - (given == SegmentBounds::kOffsets ? 1 : 0);
  l.out_dims = dims;
  l.out_dims[axis] = l.segments;
  return l;
}

hlo::Value splat(hlo::Builder& b, double v, ElementType t, const std::vector<int64_t>& dims) {
  return b.constant_splat(v, hlo::TensorType(t, dims));
}

hlo::Value splat_int(hlo::Builder& b, int64_t v, const std::vector<int64_t>& dims) {
  return b.constant_splat_int(v, hlo::TensorType(kIndex, dims));
}

hlo::Value is_nan(hlo::Builder& b, const hlo::Value& x) { return b.compare(x, x, "NE"); }

// Every segment's [start, end) along the axis: two s64 [outer, S].
struct Bounds {
  hlo::Value starts, ends;
};

Bounds bounds_of(hlo::Builder& b, const hlo::Value& bounds, SegmentBounds given, const Layout& l) {
  hlo::Value v = b.reshape(b.convert(bounds, kIndex), {l.outer, bounds.dims().back()});
  if (given == SegmentBounds::kOffsets) {
    return {b.slice(v, {0, 0}, {l.outer, l.segments}, {1, 1}), b.slice(v, {0, 1}, {l.outer, l.segments + 1}, {1, 1})};
  }
  hlo::Value ends = lower_cumsum(b, v, 1, kIndex);
  return {b.subtract(ends, v), ends};
}

// Where each of the outer * n positions goes: `row` [outer * n] is its
// segment's row in the flattened [outer * S, inner] result (clamped to a
// real row), `member` [outer * n] i1 whether it lies in a segment at all.
struct Placement {
  hlo::Value row, member;
};

Placement place(hlo::Builder& b, const Bounds& bounds, const Layout& l) {
  const std::vector<int64_t> cube{l.outer, l.n, l.segments};
  hlo::Value position = b.iota(hlo::TensorType(kIndex, cube), 1);
  hlo::Value starts = b.broadcast_in_dim(bounds.starts, cube, {0, 2});
  hlo::Value ends = b.broadcast_in_dim(bounds.ends, cube, {0, 2});
  // Segments are consecutive, so a position's segment is the number of
  // segment ends at or before it (empty segments end where they start).
  hlo::Value ended = b.convert(b.compare(ends, position, "LE"), kIndex);
  hlo::Value inside = b.and_(b.compare(starts, position, "LE"), b.compare(position, ends, "LT"));
  auto sums = b.reduce({ended, inside}, {splat_int(b, 0, {}), b.constant_splat_int(0, hlo::TensorType(ElementType::kPred, {}))},
                       {2}, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                         return std::vector<hlo::Value>{rb.add(a[0], a[2]), rb.or_(a[1], a[3])};
                       });
  hlo::Value segment = b.minimum(sums[0], splat_int(b, l.segments - 1, {l.outer, l.n}));
  hlo::Value first_row = b.multiply(b.iota(hlo::TensorType(kIndex, {l.outer, l.n}), 0),
                                    splat_int(b, l.segments, {l.outer, l.n}));
  return {b.reshape(b.add(first_row, segment), {l.outer * l.n}), b.reshape(sums[1], {l.outer * l.n})};
}

// Combines `updates` [outer * n, inner] into the rows `row` of `into`
// [outer * S, inner].
hlo::Value scatter_rows(hlo::Builder& b, const hlo::Value& into, const hlo::Value& row, const hlo::Value& updates,
                        ScatterKind kind) {
  hlo::ScatterDims dims;
  dims.update_window_dims = {1};
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  return b.scatter({into}, b.reshape(row, {row.dims()[0], 1}), {updates}, dims,
                   [kind](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                     return std::vector<hlo::Value>{scatter_combine(rb, kind, a[0], a[1])};
                   })[0];
}

double identity_of(ScatterKind kind) {
  switch (kind) {
    case ScatterKind::kMax: return -kInf;
    case ScatterKind::kMin: return kInf;
    case ScatterKind::kProd: return 1;
    default: return 0;
  }
}

// The value each segment starts from: `initial`, else the identity.
hlo::Value start_value(hlo::Builder& b, ScatterKind kind, const std::optional<hlo::Value>& initial,
                       ElementType acc) {
  return initial ? b.convert(*initial, acc) : splat(b, identity_of(kind), acc, {});
}

hlo::Value rows_where(hlo::Builder& b, const hlo::Value& keep, const hlo::Value& rows, const hlo::Value& otherwise) {
  const auto& dims = rows.dims();
  return b.select(b.broadcast_in_dim(keep, dims, {0}), rows, b.broadcast_in_dim(otherwise, dims, {}));
}

// Each segment's length as `acc` [outer * S, inner].
hlo::Value lengths_of(hlo::Builder& b, const Bounds& bounds, const Layout& l, ElementType acc) {
  hlo::Value length = b.convert(b.reshape(b.subtract(bounds.ends, bounds.starts), {l.outer * l.segments}), acc);
  return b.broadcast_in_dim(length, {l.outer * l.segments, l.inner}, {0});
}

}  // namespace

hlo::Value lower_segment_reduce(hlo::Builder& b, const hlo::Value& data, const hlo::Value& bounds,
                                SegmentBounds given, int64_t axis, ScatterKind kind,
                                const std::optional<hlo::Value>& initial) {
  const Layout l = layout_of(data, bounds, given, axis);
  const ElementType type = data.dtype(), acc = accumulation_type(type);
  const std::vector<int64_t> result{l.outer * l.segments, l.inner};
  hlo::Value start = start_value(b, kind, initial, acc);
  hlo::Value out = b.broadcast_in_dim(start, result, {});
  if (element_count(result) == 0) return b.reshape(convert_to(b, out, type), l.out_dims);
  const Bounds bs = bounds_of(b, bounds, given, l);
  if (l.outer * l.n * l.inner > 0) {
    const Placement p = place(b, bs, l);
    hlo::Value x = convert_to(b, b.reshape(data, {l.outer * l.n, l.inner}), acc);
    out = scatter_rows(b, out, p.row, rows_where(b, p.member, x, splat(b, identity_of(kind), acc, {})), kind);
  }
  if (kind == ScatterKind::kMean) {
    hlo::Value length = lengths_of(b, bs, l, acc);
    hlo::Value zero = splat(b, 0, acc, result);
    hlo::Value mean = b.divide(out, b.maximum(length, splat(b, 1, acc, result)));
    // An empty segment keeps `initial`, or is 0 / 0 without one.
    hlo::Value empty = initial ? out : splat(b, std::numeric_limits<double>::quiet_NaN(), acc, result);
    out = b.select(b.compare(length, zero, "GT"), mean, empty);
  }
  return b.reshape(convert_to(b, out, type), l.out_dims);
}

hlo::Value lower_segment_reduce_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                                         const hlo::Value& data, const hlo::Value& bounds, SegmentBounds given,
                                         int64_t axis, ScatterKind kind, const std::optional<hlo::Value>& initial) {
  const Layout l = layout_of(data, bounds, given, axis);
  const ElementType type = data.dtype(), acc = accumulation_type(type);
  const std::vector<int64_t> flat{l.outer * l.n, l.inner};
  const std::vector<int64_t> per_segment{l.outer * l.segments, l.inner};
  if (element_count(flat) == 0 || l.segments == 0) return splat(b, 0, type, data.dims());
  const Bounds bs = bounds_of(b, bounds, given, l);
  const Placement p = place(b, bs, l);
  auto per_element = [&](const hlo::Value& segment_values) { return gather_rows(b, segment_values, p.row); };
  hlo::Value x = convert_to(b, b.reshape(data, flat), acc);
  hlo::Value g = per_element(convert_to(b, b.reshape(grad, per_segment), acc));
  hlo::Value zero = splat(b, 0, acc, flat);
  auto count = [&](const hlo::Value& pred) {  // per element: how many in its segment satisfy pred
    hlo::Value ones = rows_where(b, p.member, b.convert(pred, acc), splat(b, 0, acc, {}));
    return per_element(scatter_rows(b, splat(b, 0, acc, per_segment), p.row, ones, ScatterKind::kSum));
  };

  hlo::Value dx;
  switch (kind) {
    case ScatterKind::kSum: dx = g; break;
    case ScatterKind::kMean: dx = b.divide(g, per_element(lengths_of(b, bs, l, acc))); break;
    case ScatterKind::kMax:
    case ScatterKind::kMin: {
      hlo::Value y = per_element(convert_to(b, b.reshape(output, per_segment), acc));
      hlo::Value chosen = b.or_(is_nan(b, x), b.compare(x, y, "EQ"));
      hlo::Value ties = count(chosen);
      dx = b.select(chosen, g, zero);
      // CPU splits only positive gradients among tied elements.
      hlo::Value split = b.and_(b.compare(ties, splat(b, 2, acc, flat), "GE"), b.compare(dx, zero, "GT"));
      dx = b.select(split, b.divide(dx, ties), dx);
      break;
    }
    case ScatterKind::kProd: {
      hlo::Value y = per_element(convert_to(b, b.reshape(output, per_segment), acc));
      hlo::Value nan = is_nan(b, x), zeroed = b.compare(x, zero, "EQ");
      hlo::Value special = b.or_(nan, zeroed);
      // The product of the segment's other elements, for a zero or NaN
      // element: initial times the ordinary elements, then NaN or 0 if
      // another element is NaN or zero (multiplied, so inf * 0 is NaN).
      hlo::Value ordinary = rows_where(b, p.member, b.select(special, splat(b, 1, acc, flat), x), splat(b, 1, acc, {}));
      hlo::Value start = b.broadcast_in_dim(start_value(b, kind, initial, acc), per_segment, {});
      hlo::Value others = per_element(scatter_rows(b, start, p.row, ordinary, ScatterKind::kProd));
      hlo::Value other_nans = b.subtract(count(nan), b.convert(nan, acc));
      hlo::Value other_zeros = b.subtract(count(zeroed), b.convert(zeroed, acc));
      hlo::Value one = splat(b, 1, acc, flat);
      others = b.multiply(others, b.select(b.compare(other_nans, zero, "GT"),
                                           splat(b, std::numeric_limits<double>::quiet_NaN(), acc, flat), one));
      others = b.multiply(others, b.select(b.compare(other_zeros, zero, "GT"), zero, one));
      dx = b.select(special, b.multiply(g, others), b.divide(b.multiply(g, y), x));
      break;
    }
    default: dx = g; break;
  }
  dx = rows_where(b, p.member, dx, splat(b, 0, acc, {}));
  return b.reshape(convert_to(b, dx, type), data.dims());
}

hlo::Value segment_offsets_invalid(hlo::Builder& b, const hlo::Value& offsets, int64_t size) {
  const auto& dims = offsets.dims();
  const int64_t last = dims.back();
  if (element_count(dims) == 0) return false_flag(b);
  hlo::Value v = b.convert(offsets, kIndex);
  hlo::Value bad = b.or_(b.compare(v, splat_int(b, 0, dims), "LT"), b.compare(v, splat_int(b, size, dims), "GT"));
  hlo::Value flag = any_true(b, bad);
  if (last < 2) return flag;
  std::vector<int64_t> zeros(dims.size(), 0), ones(dims.size(), 1), head = dims, tail_start(dims.size(), 0);
  head.back() = last - 1;
  tail_start.back() = 1;
  hlo::Value earlier = b.slice(v, zeros, head, ones);
  hlo::Value later = b.slice(v, tail_start, dims, ones);
  return b.or_(flag, any_true(b, b.compare(later, earlier, "LT")));
}

}  // namespace torch_tpu::ops
