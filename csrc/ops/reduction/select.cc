#include "ops/reduction/select.h"

#include <limits>
#include <vector>

#include "ops/indexing/gather_scatter.h"
#include "ops/reduction/reduce.h"
#include "ops/reduction/sort.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

// How many elements along `dim` are true, as `count`.
Value count_along(hlo::Builder& b, const Value& pred, int64_t dim, ElementType count) {
  return lower_reduce(b, pred, ReduceKind::kSum, {dim}, /*keepdim=*/false, count, count);
}

// Order keys as unsigned integers of their width, in the same order.
Value unsigned_order(hlo::Builder& b, const Value& order) {
  const bool wide = order.dtype() == ElementType::kS64;
  const int64_t sign = wide ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int32_t>::min();
  const TensorType as(wide ? ElementType::kU64 : ElementType::kU32, order.dims());
  return b.bitcast_convert(b.xor_(order, b.constant_splat_int(sign, order.type())), as);
}

// Per row (`dim` reduced), the largest t with count(key < t) <= rank, set
// bit by bit from bit `steps` - 1 down (`steps`: an s32 scalar): the
// rank-th smallest key (0-based) when the bits cover every key. `rank` is
// in the count type.
Value bisect(hlo::Builder& b, const Value& key, const Value& rank, int64_t dim, const Value& steps) {
  const std::vector<int64_t> shape = key.dims();
  const TensorType row(key.dtype(), rank.dims());
  const TensorType s32 = TensorType::scalar(ElementType::kS32);
  auto cond = [s32](hlo::Builder& c, const Values& a) {
    return Values{c.compare(a[0], c.constant_splat_int(0, s32), "GT")};
  };
  auto body = [&](hlo::Builder& c, const Values& a) {
    const Value bit = c.subtract(a[0], c.constant_splat_int(1, s32));
    const Value shift = c.broadcast_in_dim(c.convert(bit, key.dtype()), row.dims, {});
    const Value t = c.or_(a[1], c.shift_left(c.constant_splat_int(1, row), shift));
    const Value below = count_along(c, c.compare(key, broadcast_reduced(c, t, shape, {dim}), "LT"), dim, rank.dtype());
    return Values{bit, c.select(c.compare(below, rank, "LE"), t, a[1])};
  };
  return b.while_loop({steps, b.constant_splat_int(0, row)}, cond, body)[1];
}

int64_t bits_for(int64_t n) {
  int64_t bits = 0;
  while (bits < 63 && (int64_t{1} << bits) < n) ++bits;
  return bits;
}

// The element of each row at sorted position `rank` (s64, one per row) of a
// stable ascending sort, and its index, without sorting.
std::pair<Value, Value> select_ranked(hlo::Builder& b, const Value& x, const Value& rank, int64_t dim, bool keepdim) {
  const std::vector<int64_t> shape = x.dims();
  const int64_t n = shape[dim];
  const bool short_rows = n <= std::numeric_limits<int32_t>::max();
  const ElementType count = short_rows ? ElementType::kS32 : ElementType::kS64;
  const TensorType s32 = TensorType::scalar(ElementType::kS32);
  const Value key = unsigned_order(b, lower_order_key(b, x, /*descending=*/false));
  const Value wanted = b.convert(rank, count);
  const int64_t key_bits = key.dtype() == ElementType::kU64 ? 64 : 32;
  const Value value_key = bisect(b, key, wanted, dim, b.constant_splat_int(key_bits, s32));

  // Which of the positions holding that key: the target-th (0-based), after
  // those of equal keys that sort before it.
  const Value found = broadcast_reduced(b, value_key, shape, {dim});
  const Value match = b.compare(key, found, "EQ");
  const Value target = b.subtract(wanted, count_along(b, b.compare(key, found, "LT"), dim, count));
  const TensorType positions(short_rows ? ElementType::kU32 : ElementType::kU64, shape);
  const Value largest = b.constant_splat_uint(std::numeric_limits<uint64_t>::max() >> (short_rows ? 32 : 0),
                                              positions);
  // Positions of the matches; others above every position.
  const Value position_key = b.select(match, b.iota(positions, dim), largest);
  const Value first = lower_reduce(b, position_key, ReduceKind::kMin, {dim}, /*keepdim=*/false, positions.dtype,
                                   positions.dtype);
  const Value later = any_true(b, b.compare(target, b.constant_splat_int(0, target.type()), "GT"));
  const Value steps = b.select(later, b.constant_splat_int(bits_for(n), s32), b.constant_splat_int(0, s32));
  const Value nth = bisect(b, position_key, target, dim, steps);
  const Value index_row =
      b.convert(b.select(b.broadcast_in_dim(later, first.dims(), {}), nth, first), ElementType::kS64);

  std::vector<int64_t> one = shape;
  one[dim] = 1;
  const Value index = b.reshape(index_row, one);
  const Value value = lower_gather_bits(b, x, index, dim);
  if (keepdim) return {value, index};
  return {b.reshape(value, index_row.dims()), index_row};
}

}  // namespace

std::pair<Value, Value> lower_kthvalue(hlo::Builder& b, const Value& x, int64_t k, int64_t dim, bool keepdim) {
  if (x.rank() == 0) return lower_sort(b, x, 0, false);
  const TensorType row(ElementType::kS64, reduced_shape(x.dims(), {dim}, /*keepdim=*/false));
  return select_ranked(b, x, b.constant_splat_int(k - 1, row), dim, keepdim);
}

std::pair<Value, Value> lower_median(hlo::Builder& b, const Value& x, int64_t dim, bool keepdim, bool ignore_nan) {
  if (x.rank() == 0) return lower_sort(b, x, 0, false);
  const int64_t n = x.dims()[dim];
  const TensorType row(ElementType::kS64, reduced_shape(x.dims(), {dim}, /*keepdim=*/false));
  auto k = [&](int64_t v) { return b.constant_splat_int(v, row); };
  if (!is_floating(x.dtype())) return select_ranked(b, x, k((n - 1) / 2), dim, keepdim);
  // The rank to pick depends on the row's NaN count (NaN sorts last).
  const Value nans = count_along(b, b.compare(x, x, "NE"), dim, ElementType::kS64);
  Value rank;
  if (ignore_nan) {
    // (m - 1) / 2 over the m numbers. An all-NaN row gives NaN; which of
    // its indices is unspecified (CPU's nth_element picks one), the middle
    // one here.
    const Value m = b.subtract(k(n), nans);
    rank = b.select(b.compare(m, k(0), "GT"), b.divide(b.subtract(m, k(1)), k(2)), k((n - 1) / 2));
  } else {
    // The first NaN when there is one.
    rank = b.select(b.compare(nans, k(0), "GT"), b.subtract(k(n), nans), k((n - 1) / 2));
  }
  return select_ranked(b, x, rank, dim, keepdim);
}

}  // namespace torch_tpu::ops
