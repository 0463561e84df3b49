#include "ops/reduction/sort.h"

#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/indexing/gather_scatter.h"
#include "ops/reduction/reduce.h"
#include "ops/reduction/scan.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

Value is_nan(hlo::Builder& b, const Value& x) { return b.compare(x, x, "NE"); }

// 8-bit floats are ordered by their bit patterns: XLA's CPU compiler
// compares them as f16 and flushes f16 subnormals, so e5m2fnuz values in
// [2^-15, 2^-14) would compare equal. The order of a pattern is its
// magnitude bits (which grow with the value) negated when the sign bit is
// set, both zeros being 0; NaN is the greatest.
Value float8_order(hlo::Builder& b, const Value& x) {
  const ElementType type = x.dtype();
  const Value bits = b.convert(b.bitcast_convert(x, TensorType(ElementType::kS8, x.dims())), ElementType::kS32);
  auto k = [&](int64_t v) { return b.constant_splat_int(v, bits.type()); };
  const Value magnitude = b.and_(bits, k(0x7F));
  const Value nan = type == ElementType::kF8E4M3FN ? b.compare(magnitude, k(0x7F), "EQ")
                    : type == ElementType::kF8E5M2 ? b.compare(magnitude, k(0x7C), "GT")
                                                   : b.compare(bits, k(-128), "EQ");  // fnuz: the "negative zero"
  const Value order = b.select(b.compare(bits, k(0), "LT"), b.negate(magnitude), magnitude);
  return b.select(nan, k(0x7FFFFFFF), order);
}

// The order of a float's bits as a signed integer of its width (s32 for
// f32, s64 for f64): both zeros equal, negative values below positive ones
// and growing in magnitude downwards, NaN the greatest.
Value float_order(hlo::Builder& b, const Value& f) {
  const ElementType int_type = f.dtype() == ElementType::kF64 ? ElementType::kS64 : ElementType::kS32;
  const TensorType t(int_type, f.dims());
  const int64_t largest = int_type == ElementType::kS64 ? std::numeric_limits<int64_t>::max()
                                                        : std::numeric_limits<int32_t>::max();
  const Value zero = b.constant_splat(0.0, f.type());
  const Value bits = b.bitcast_convert(b.select(b.compare(f, zero, "EQ"), zero, f), t);
  const Value flipped = b.xor_(bits, b.constant_splat_int(largest, t));
  const Value order = b.select(b.compare(bits, b.constant_splat_int(0, t), "LT"), flipped, bits);
  return b.select(is_nan(b, f), b.constant_splat_int(largest, t), order);
}

}  // namespace

Value lower_order_key(hlo::Builder& b, const Value& x, bool descending) {
  const ElementType type = x.dtype();
  const TensorType s32(ElementType::kS32, x.dims()), s64(ElementType::kS64, x.dims());
  Value order;
  if (is_float8(type)) {
    order = float8_order(b, x);
  } else if (type == ElementType::kF64) {
    order = float_order(b, x);
  } else if (is_floating(type)) {
    order = float_order(b, convert_to(b, x, ElementType::kF32));
  } else if (type == ElementType::kU32) {
    order = b.xor_(b.bitcast_convert(x, s32), b.constant_splat_int(std::numeric_limits<int32_t>::min(), s32));
  } else if (type == ElementType::kU64) {
    order = b.xor_(b.bitcast_convert(x, s64), b.constant_splat_int(std::numeric_limits<int64_t>::min(), s64));
  } else if (type == ElementType::kS64) {
    order = x;
  } else {
    order = b.convert(x, ElementType::kS32);
  }
  return descending ? b.not_(order) : order;
}

namespace {

// The positions that sort `half` (s64 keys in [-2^31, 2^31)) stably
// along dim, for rows of at most 2^31 - 1: each key is packed with its
// position into one s64 (the key in the high half, the position in the
// low half, so equal keys keep their order) and the packed values sorted
// alone. XLA's CPU runtime sorts a single operand compared with LT by
// std::sort, where (keys, positions) pairs call the compiled comparator for
// every comparison (a million f32: 84 ms against 395).
Value packed_positions(hlo::Builder& b, const Value& half, int64_t dim) {
  const TensorType s64(ElementType::kS64, half.dims());
  const Value packed = b.or_(b.shift_left(half, b.constant_splat_int(32, s64)), b.iota(s64, dim));
  const Value sorted = b.sort({packed}, dim, /*is_stable=*/false, [](hlo::Builder& r, const std::vector<Value>& a) {
    return std::vector<Value>{r.compare(a[0], a[1], "LT")};
  })[0];
  return b.and_(sorted, b.constant_splat_int(0xFFFFFFFF, s64));
}

// The stable sort of s64 keys by two packed sorts, least significant half
// first: the second sort keeps the first's order among equal high halves.
// When every key lies within 2^32 of the smallest (labels, token ids), a
// stablehlo.case sorts their distances from it once instead.
Value two_pass_positions(hlo::Builder& b, const Value& order, int64_t dim) {
  const TensorType s64 = order.type();
  auto k = [&](int64_t v) { return b.constant_splat_int(v, s64); };
  std::vector<int64_t> all(order.rank());
  for (int64_t d = 0; d < order.rank(); ++d) all[d] = d;
  auto whole = [&](ReduceKind kind) {
    return lower_reduce(b, order, kind, all, /*keepdim=*/false, ElementType::kS64, ElementType::kS64);
  };
  const Value low = whole(ReduceKind::kMin), high = whole(ReduceKind::kMax);
  // high - low, exact as an unsigned 64-bit difference.
  const TensorType u64(ElementType::kU64, {});
  const Value span = b.subtract(b.bitcast_convert(high, u64), b.bitcast_convert(low, u64));
  const Value narrow = b.compare(span, b.constant_splat_int(0xFFFFFFFF, u64), "LE");
  const int64_t bias = int64_t{1} << 31;
  auto one_pass = [&](hlo::Builder& c, const std::vector<Value>&) {
    const Value distance = c.subtract(order, c.broadcast_in_dim(low, order.dims(), {}));
    return std::vector<Value>{packed_positions(c, c.subtract(distance, k(bias)), dim)};
  };
  auto two_passes = [&](hlo::Builder& c, const std::vector<Value>&) {
    const Value low_half = c.subtract(c.and_(order, k(0xFFFFFFFF)), k(bias));
    const Value first = packed_positions(c, low_half, dim);
    const Value high_half = c.shift_right_arithmetic(order, k(32));
    const Value second = packed_positions(c, lower_gather(c, high_half, first, dim).value, dim);
    return std::vector<Value>{lower_gather(c, first, second, dim).value};
  };
  return b.case_(b.convert(narrow, ElementType::kS32), {two_passes, one_pass}, {s64})[0];
}

}  // namespace

Value lower_gather_bits(hlo::Builder& b, const Value& x, const Value& positions, int64_t dim) {
  if (!is_floating(x.dtype())) return lower_gather(b, x, positions, dim).value;
  const TensorType as(same_width_signed_int(x.dtype()), x.dims());
  const Value moved = lower_gather(b, b.bitcast_convert(x, as), positions, dim).value;
  return b.bitcast_convert(moved, TensorType(x.dtype(), moved.dims()));
}

namespace {

Value slice_dim(hlo::Builder& b, const Value& x, int64_t dim, int64_t start, int64_t limit) {
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  starts[dim] = start;
  limits[dim] = limit;
  return b.slice(x, starts, limits, strides);
}

// values and indices (same shape) at the position `pos` (one per row,
// `dim` removed) along `dim`, with `dim` kept (size 1) when keepdim.
std::pair<Value, Value> pick_at(hlo::Builder& b, const Value& values, const Value& indices, const Value& pos,
                                int64_t dim, bool keepdim) {
  const std::vector<int64_t>& shape = values.dims();
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < values.rank(); ++d) {
    if (d != dim) kept.push_back(d);
  }
  const TensorType s64(ElementType::kS64, shape);
  const TensorType scalar = TensorType::scalar(ElementType::kS64);
  Value pick = b.compare(b.iota(s64, dim), b.broadcast_in_dim(pos, shape, kept), "EQ");
  auto picked = b.reduce({pick, values, indices},
                         {b.constant_splat_int(0, TensorType::scalar(ElementType::kPred)),
                          b.constant_splat(0, TensorType::scalar(values.dtype())), b.constant_splat_int(0, scalar)},
                         {dim}, [](hlo::Builder& r, const std::vector<Value>& a) {
                           // args: acc (found, value, index), then element (found, value, index)
                           return std::vector<Value>{r.or_(a[0], a[3]), r.select(a[3], a[4], a[1]),
                                                     r.select(a[3], a[5], a[2])};
                         });
  Value v = picked[1], i = picked[2];
  if (keepdim) {
    std::vector<int64_t> dims = shape;
    dims[dim] = 1;
    v = b.reshape(v, dims);
    i = b.reshape(i, dims);
  }
  return {v, i};
}

}  // namespace

Value lower_sort_positions(hlo::Builder& b, const Value& order, int64_t dim) {
  const TensorType s64(ElementType::kS64, order.dims());
  if (order.dims()[dim] > std::numeric_limits<int32_t>::max()) {
    // Positions do not fit beside the keys: sort (keys, positions) pairs.
    return b.sort({order, b.iota(s64, dim)}, dim, /*is_stable=*/true, [](hlo::Builder& r, const std::vector<Value>& a) {
      return std::vector<Value>{r.compare(a[0], a[1], "LT")};
    })[1];
  }
  if (order.dtype() == ElementType::kS64) return two_pass_positions(b, order, dim);
  return packed_positions(b, b.convert(order, ElementType::kS64), dim);
}

std::pair<Value, Value> lower_sort(hlo::Builder& b, const Value& x, int64_t dim, bool descending) {
  const TensorType index_type(ElementType::kS64, x.dims());
  if (x.rank() == 0 || x.type().num_elements() == 0) return {x, b.constant_splat_int(0, index_type)};
  if (dim < 0 || dim >= x.rank()) throw hlo::HloError("sort: dimension out of range for " + x.type().to_string());
  const Value positions = lower_sort_positions(b, lower_order_key(b, x, descending), dim);
  return {lower_gather_bits(b, x, positions, dim), positions};
}

namespace {

// The first k indices of each row of `key` (rows x n, f32) in descending
// key order, ties by lower index: chlo.top_k, which XLA's CPU compiler runs
// as a selection for f32 only (top-50 of 50,257 logits: 1.4 ms where a sort
// took 326 ms; an integer or f64 key sorts).
Value top_k_indices(hlo::Builder& b, const Value& key, int64_t k) {
  return b.convert(b.top_k(key, k).second, ElementType::kS64);
}

// Per row, how many of `n` candidates count (`flags`: rows x n, pred),
// at most k.
Value count_rows(hlo::Builder& b, const Value& flags, int64_t k) {
  Value ones = b.convert(flags, ElementType::kS64);
  Value count = b.reduce({ones}, {b.constant_splat_int(0, TensorType::scalar(ElementType::kS64))}, {1},
                         [](hlo::Builder& r, const std::vector<Value>& a) {
                           return std::vector<Value>{r.add(a[0], a[1])};
                         })[0];
  return b.minimum(count, b.constant_splat_int(k, count.type()));
}

// The indices of topk of `y` (rows x n, f32; the input, negated for the
// smallest) in PyTorch's order, which counts NaN largest. Without NaN the
// key is y with both zeros as +0 (so they tie and fall by index). A NaN
// cannot get a key of its own (f32 inputs use every ordered key already),
// so rows with NaN merge three selections:
//   numbers: the top k with NaN keyed -inf; only the entries above -inf
//     are taken from it (a NaN ties with a real -inf there);
//   y == -inf: the first k such indices;
//   NaN: the first k NaN indices;
// as NaNs, numbers, -infs for the largest, and numbers, -infs, NaNs for the
// smallest. Only inputs with a NaN pay for the three (a stablehlo.case).
Value ordered_top_k(hlo::Builder& b, const Value& y, int64_t k, bool largest) {
  const TensorType t = y.type();
  const int64_t rows = y.dims()[0];
  const double inf = std::numeric_limits<double>::infinity();
  const Value neg_inf = b.constant_splat(-inf, t), zero = b.constant_splat(0, t), one = b.constant_splat(1, t);
  const Value nan = is_nan(b, y);
  const Value key = b.select(b.compare(y, zero, "EQ"), zero, y);
  const TensorType s64(ElementType::kS64, {rows, k});
  const Value any_nan = any_true(b, nan);
  auto without_nan = [&](hlo::Builder& c, const std::vector<Value>&) {
    return std::vector<Value>{top_k_indices(c, key, k)};
  };
  auto with_nan = [&](hlo::Builder& c, const std::vector<Value>&) {
    const Value numbers_key = c.select(nan, neg_inf, key);
    const Value is_neg_inf = c.compare(y, neg_inf, "EQ");
    const Value numbers = top_k_indices(c, numbers_key, k);
    const Value neg_infs = top_k_indices(c, c.select(is_neg_inf, one, zero), k);
    const Value nans = top_k_indices(c, c.select(nan, one, zero), k);
    const Value n_numbers = count_rows(c, c.compare(numbers_key, neg_inf, "GT"), k);
    const Value n_neg_infs = count_rows(c, is_neg_inf, k);
    const Value n_nans = count_rows(c, nan, k);
    // Position j takes part p's entry j - (sizes of the parts before p).
    const std::vector<Value> parts = largest ? std::vector<Value>{nans, numbers, neg_infs}
                                             : std::vector<Value>{numbers, neg_infs, nans};
    const std::vector<Value> sizes = largest ? std::vector<Value>{n_nans, n_numbers, n_neg_infs}
                                             : std::vector<Value>{n_numbers, n_neg_infs, n_nans};
    const Value j = c.iota(s64, 1);
    Value index = c.constant_splat_int(0, s64);
    Value before = c.constant_splat_int(0, s64);
    for (size_t p = 0; p < parts.size(); ++p) {
      const Value size = c.broadcast_in_dim(sizes[p], {rows, k}, {0});
      const Value at = c.clamp(c.constant_splat_int(0, s64), c.subtract(j, before), c.constant_splat_int(k - 1, s64));
      const Value entry = lower_gather(c, parts[p], at, 1).value;
      const Value here = c.and_(c.compare(j, before, "GE"), c.compare(j, c.add(before, size), "LT"));
      index = c.select(here, entry, index);
      before = c.add(before, size);
    }
    return std::vector<Value>{index};
  };
  return b.case_(b.convert(any_nan, ElementType::kS32), {without_nan, with_nan}, {s64})[0];
}

// topk of f32 / f16 / bf16 along `dim` without sorting the rows.
std::pair<Value, Value> top_k_by_key(hlo::Builder& b, const Value& x, int64_t k, int64_t dim, bool largest) {
  const int64_t rank = x.rank();
  std::vector<int64_t> to_last, from_last(rank);
  for (int64_t i = 0; i < rank; ++i) {
    if (i != dim) to_last.push_back(i);
  }
  to_last.push_back(dim);
  for (int64_t i = 0; i < rank; ++i) from_last[to_last[i]] = i;
  const Value row_major = dim == rank - 1 ? x : b.transpose(x, to_last);
  const std::vector<int64_t> moved = row_major.dims();
  const int64_t n = moved.back();
  const int64_t rows = TensorType(x.dtype(), moved).num_elements() / n;
  const Value rows2d = b.reshape(row_major, {rows, n});
  Value y = convert_to(b, rows2d, ElementType::kF32);
  if (!largest) y = b.negate(y);
  const Value index = ordered_top_k(b, y, k, largest);
  const Value values = lower_gather(b, rows2d, index, 1).value;
  std::vector<int64_t> out = moved;
  out.back() = k;
  auto back = [&](const Value& v) {
    const Value shaped = b.reshape(v, out);
    return dim == rank - 1 ? shaped : b.transpose(shaped, from_last);
  };
  return {back(values), back(index)};
}

bool has_fast_top_k(ElementType t) {
  return t == ElementType::kF32 || t == ElementType::kF16 || t == ElementType::kBF16;
}

}  // namespace

std::pair<Value, Value> lower_topk(hlo::Builder& b, const Value& x, int64_t k, int64_t dim, bool largest) {
  if (x.rank() == 0) return lower_sort(b, x, 0, largest);  // k is 0 or 1; the glue handles 0
  if (has_fast_top_k(x.dtype()) && k > 0 && x.type().num_elements() > 0) {
    return top_k_by_key(b, x, k, dim, largest);
  }
  auto [values, indices] = lower_sort(b, x, dim, largest);
  return {slice_dim(b, values, dim, 0, k), slice_dim(b, indices, dim, 0, k)};
}

std::pair<Value, Value> lower_mode(hlo::Builder& b, const Value& x, int64_t dim, bool keepdim) {
  if (x.rank() == 0) return lower_sort(b, x, 0, false);
  const int64_t n = x.dims()[dim];
  auto [values, indices] = lower_sort(b, x, dim, false);
  // Runs of equal values in the sorted rows.
  std::vector<int64_t> low(x.rank(), 0), high(x.rank(), 0), interior(x.rank(), 0);
  low[dim] = 1;
  high[dim] = -1;
  Value previous = b.pad(values, b.constant_splat(0, TensorType::scalar(x.dtype())), low, high, interior);
  Value same = b.compare(values, previous, "EQ");
  if (is_floating(x.dtype())) same = b.or_(same, b.and_(is_nan(b, values), is_nan(b, previous)));
  const TensorType s64(ElementType::kS64, x.dims());
  Value pos = b.iota(s64, dim);
  Value zero = b.constant_splat_int(0, s64);
  same = b.and_(same, b.compare(pos, zero, "GT"));
  Value run_ends = b.pad(b.not_(same), b.constant_splat_int(1, TensorType::scalar(ElementType::kPred)), high, low,
                         interior);
  Value start = lower_cummax_min(b, b.select(same, zero, pos), dim, /*is_max=*/true).first;
  Value length = b.select(run_ends, b.add(b.subtract(pos, start), b.constant_splat_int(1, s64)), zero);
  const TensorType scalar = TensorType::scalar(ElementType::kS64);
  auto reduce = [&](const Value& v, int64_t init, bool max) {
    return b.reduce({v}, {b.constant_splat_int(init, scalar)}, {dim}, [max](hlo::Builder& r, const std::vector<Value>& a) {
      return std::vector<Value>{max ? r.maximum(a[0], a[1]) : r.minimum(a[0], a[1])};
    })[0];
  };
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != dim) kept.push_back(d);
  }
  Value longest = b.broadcast_in_dim(reduce(length, 0, true), x.dims(), kept);
  // The first longest run holds the smallest value; its end, the last
  // occurrence (the sort is stable).
  Value end = reduce(b.select(b.compare(length, longest, "EQ"), pos, b.constant_splat_int(n, s64)), n, false);
  return pick_at(b, values, indices, end, dim, keepdim);
}

}  // namespace torch_tpu::ops
