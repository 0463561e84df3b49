#include "ops/reduction/scan.h"

#include <limits>

#include "ops/broadcast.h"
#include "ops/elementwise/binary_math.h"
#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

// The lowest (or highest) value of t, the identity of a running max (min).
Value extreme(hlo::Builder& b, ElementType t, bool lowest) {
  const TensorType s = TensorType::scalar(t);
  if (is_floating(t)) {
    const double inf = std::numeric_limits<double>::infinity();
    return b.constant_splat(lowest ? -inf : inf, s);
  }
  if (t == ElementType::kPred) return b.constant_splat_int(lowest ? 0 : 1, s);
  const uint64_t bits = static_cast<uint64_t>(element_size(t)) * 8;
  if (is_unsigned(t)) {
    if (lowest) return b.constant_splat_int(0, s);
    return b.constant_splat_uint(bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1, s);
  }
  const int64_t max = bits == 64 ? std::numeric_limits<int64_t>::max() : (int64_t{1} << (bits - 1)) - 1;
  return b.constant_splat_int(lowest ? -max - 1 : max, s);
}

Value is_nan(hlo::Builder& b, const Value& x) { return b.compare(x, x, "NE"); }

}  // namespace

namespace {

// Hillis and Steele's scan: log2(n) whole-array steps.
std::vector<Value> doubling_scan(hlo::Builder& b, const std::vector<Value>& xs, int64_t dim,
                                 const std::vector<Value>& identities, const ScanCombine& combine) {
  const Value& x0 = xs[0];
  const int64_t n = x0.dims()[dim];
  std::vector<Value> acc = xs;
  const std::vector<int64_t> zeros(x0.rank(), 0);
  for (int64_t k = 1; k < n; k *= 2) {
    // Each element combines with the prefix ending k places before it.
    std::vector<int64_t> lows = zeros, highs = zeros;
    lows[dim] = k;
    highs[dim] = -k;
    std::vector<Value> shifted;
    for (size_t i = 0; i < acc.size(); ++i) {
      shifted.push_back(b.pad(acc[i], identities[i], lows, highs, zeros));
    }
    acc = combine(b, shifted, acc);
  }
  return acc;
}

// Scans of more than kDirect elements go by blocks of kBlock.
constexpr int64_t kBlock = 32;
constexpr int64_t kDirect = 2 * kBlock;

// Scans a tuple along an axis (of the split tensor, or of the blocks' totals).
using ScanAlong = std::function<std::vector<Value>(hlo::Builder&, const std::vector<Value>&, int64_t axis)>;

// How a long scan goes by blocks: `within` scans each block (`fill`, 0-dim
// values of the inputs' types, pads the last one), `across` the blocks'
// totals (one kBlock-th as many values, of the results' types), and
// `combine` joins each block with the total of those before it (`start`,
// 0-dim values of the results' types, before the first block).
struct Blocks {
  std::vector<Value> fill, start;
  ScanAlong within, across;
  ScanCombine combine;
};

// A long scan by blocks: log2(kBlock) whole-array steps (or one product)
// instead of log2(n): the doubling scan's steps each make a new array the
// size of the input, which XLA keeps (about 200 bytes per element of a
// 16M-element scan), and do n log2(n) work.
std::vector<Value> blocked_scan(hlo::Builder& b, const std::vector<Value>& xs, int64_t dim, const Blocks& how) {
  const std::vector<int64_t>& dims = xs[0].dims();
  const int64_t n = dims[dim], blocks = (n + kBlock - 1) / kBlock;
  std::vector<int64_t> zeros(dims.size(), 0), tail = zeros;
  tail[dim] = blocks * kBlock - n;
  std::vector<int64_t> split = dims;  // [..., blocks, kBlock, ...]
  split[dim] = blocks;
  split.insert(split.begin() + dim + 1, kBlock);
  std::vector<Value> within;
  for (size_t i = 0; i < xs.size(); ++i) {
    within.push_back(b.reshape(b.pad(xs[i], how.fill[i], zeros, tail, zeros), split));
  }
  within = how.within(b, within, dim + 1);
  // Each block's total, then the totals of the blocks before each block.
  std::vector<int64_t> starts(split.size(), 0), limits = split, strides(split.size(), 1);
  starts[dim + 1] = kBlock - 1;
  std::vector<int64_t> per_block = split;
  per_block.erase(per_block.begin() + dim + 1);
  std::vector<Value> totals;
  for (const Value& w : within) totals.push_back(b.reshape(b.slice(w, starts, limits, strides), per_block));
  totals = how.across(b, totals, dim);
  std::vector<int64_t> before = zeros, drop_last = zeros;
  before[dim] = 1;
  drop_last[dim] = -1;
  std::vector<Value> earlier;
  std::vector<int64_t> spread(per_block.size());
  for (size_t d = 0; d < spread.size(); ++d) spread[d] = d < static_cast<size_t>(dim + 1) ? d : d + 1;
  for (size_t i = 0; i < totals.size(); ++i) {
    Value shifted = b.pad(totals[i], how.start[i], before, drop_last, zeros);
    earlier.push_back(b.broadcast_in_dim(shifted, split, spread));
  }
  std::vector<Value> combined = how.combine(b, earlier, within);
  std::vector<int64_t> joined = dims;
  joined[dim] = blocks * kBlock;
  std::vector<int64_t> from(dims.size(), 0), to = dims, step(dims.size(), 1);
  std::vector<Value> out;
  for (const Value& c : combined) out.push_back(b.slice(b.reshape(c, joined), from, to, step));
  return out;
}

}  // namespace

std::vector<Value> scan(hlo::Builder& b, const std::vector<Value>& xs, int64_t dim,
                        const std::vector<Value>& identities, const ScanCombine& combine) {
  if (xs.empty()) throw hlo::HloError("scan: no operands");
  const Value& x0 = xs[0];
  if (x0.rank() == 0) return xs;
  if (dim < 0 || dim >= x0.rank()) throw hlo::HloError("scan: dimension out of range for " + x0.type().to_string());
  if (x0.type().num_elements() == 0) return xs;
  if (x0.dims()[dim] <= kDirect) return doubling_scan(b, xs, dim, identities, combine);
  const ScanAlong within = [&](hlo::Builder& s, const std::vector<Value>& blocks, int64_t axis) {
    return doubling_scan(s, blocks, axis, identities, combine);
  };
  const ScanAlong across = [&](hlo::Builder& s, const std::vector<Value>& totals, int64_t d) {
    return scan(s, totals, d, identities, combine);
  };
  return blocked_scan(b, xs, dim, {identities, identities, within, across, combine});
}

namespace {

// x's prefix sums along `axis` as one product with a triangle of ones. Each
// sum adds its prefix in the product's order; every value of x must be
// finite, since the product also multiplies the values after each prefix by 0.
Value prefix_product(hlo::Builder& b, const Value& x, int64_t axis) {
  const int64_t n = x.dims()[axis];
  const TensorType square(ElementType::kS32, {n, n});
  const Value on_or_above = b.convert(b.compare(b.iota(square, 0), b.iota(square, 1), "LE"), x.dtype());
  return axis::apply_matrix(b, x, axis, on_or_above, /*transposed=*/true);
}

// Prefix sums of a real float x along a block's axis, as a sequential sum's
// IEEE semantics give them: the finite values summed by prefix_product, and
// from the first +inf (-inf, NaN) of the block on, +inf (-inf, NaN; NaN
// once both infinities were seen). One reduction finds the three firsts.
Value float_prefix_sums(hlo::Builder& b, const Value& x, int64_t axis) {
  const TensorType type = x.type();
  const auto splat = [&](double v) { return b.constant_splat(v, type); };
  const double inf = std::numeric_limits<double>::infinity();
  const Value sums = prefix_product(b, b.select(b.is_finite(x), x, splat(0)), axis);
  const TensorType positions(ElementType::kS32, type.dims);
  const Value position = b.iota(positions, axis);
  const Value nowhere = b.constant_splat_int(x.dims()[axis], positions);
  const Value none = b.constant_splat_int(x.dims()[axis], TensorType::scalar(ElementType::kS32));
  const auto where = [&](const Value& is) { return b.select(is, position, nowhere); };
  const std::vector<Value> firsts =
      b.reduce({where(b.compare(x, splat(inf), "EQ")), where(b.compare(x, splat(-inf), "EQ")), where(is_nan(b, x))},
               {none, none, none}, {axis}, [](hlo::Builder& r, const std::vector<Value>& a) {
                 return std::vector<Value>{r.minimum(a[0], a[3]), r.minimum(a[1], a[4]), r.minimum(a[2], a[5])};
               });
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != axis) kept.push_back(d);
  }
  const auto since = [&](const Value& first) {
    return b.compare(position, b.broadcast_in_dim(first, type.dims, kept), "GE");
  };
  const Value positive = since(firsts[0]), negative = since(firsts[1]);
  const Value nan = b.or_(since(firsts[2]), b.and_(positive, negative));
  Value out = b.select(positive, splat(inf), sums);
  out = b.select(negative, splat(-inf), out);
  return b.select(nan, splat(std::numeric_limits<double>::quiet_NaN()), out);
}

// Sums along more than this many values go by products (below, the
// doubling scan compiles to fewer kernels and runs about as fast).
constexpr int64_t kLongSum = kBlock * kBlock;

// Prefix sums of x along a `dim` longer than kLongSum by blocks, in type
// `out`: `within` sums each block (x's type in, `out` out), the blocks'
// totals are summed by lower_cumsum.
Value blocked_sums(hlo::Builder& b, const Value& x, int64_t dim, ElementType out,
                   const std::function<Value(hlo::Builder&, const Value&, int64_t axis)>& within) {
  const ScanAlong each_block = [within](hlo::Builder& s, const std::vector<Value>& xs, int64_t axis) {
    return std::vector<Value>{within(s, xs[0], axis)};
  };
  const ScanAlong across = [](hlo::Builder& s, const std::vector<Value>& totals, int64_t d) {
    return std::vector<Value>{lower_cumsum(s, totals[0], d, totals[0].dtype())};
  };
  const ScanCombine add = [](hlo::Builder& s, const std::vector<Value>& e, const std::vector<Value>& l) {
    return std::vector<Value>{s.add(e[0], l[0])};
  };
  const auto zero = [&b](ElementType t) { return b.constant_splat(0.0, TensorType::scalar(t)); };
  return blocked_scan(b, {x}, dim, {{zero(x.dtype())}, {zero(out)}, each_block, across, add})[0];
}

}  // namespace

// Long sums of floats and counts of booleans go by blocks of matrix
// products: XLA's CPU compiler materializes each step of a doubling scan
// (15 - 20 ms for a million f32 against 3 - 5 by products), and matrix units
// take the products on a TPU or GPU. Integer sums keep the doubling scan (a
// product would not be exact), and so do short ones, which it compiles
// into fewer kernels.
hlo::Value lower_cumsum(hlo::Builder& b, const Value& x, int64_t dim, ElementType out) {
  const ElementType acc = out == ElementType::kPred ? ElementType::kS64 : accumulation_type(out);
  const bool blocked = x.rank() > 0 && x.type().num_elements() > 0 && x.dims()[dim] > kLongSum;
  if (blocked && x.dtype() == ElementType::kPred && is_integer(acc)) {
    // A block's count is exact in f32; the totals are summed in acc.
    const auto counts = [acc](hlo::Builder& s, const Value& mask, int64_t axis) {
      return s.convert(prefix_product(s, s.convert(mask, ElementType::kF32), axis), acc);
    };
    return convert_to(b, blocked_sums(b, x, dim, acc, counts), out);
  }
  Value v = convert_to(b, convert_to(b, x, out), acc);
  if (blocked && is_complex(acc)) {
    // Complex sums add real and imaginary parts apart.
    const Value re = b.real(v), im = b.imag(v);
    return convert_to(b, b.complex(blocked_sums(b, re, dim, re.dtype(), float_prefix_sums),
                                   blocked_sums(b, im, dim, im.dtype(), float_prefix_sums)), out);
  }
  if (blocked && is_floating(acc)) return convert_to(b, blocked_sums(b, v, dim, acc, float_prefix_sums), out);
  Value r = scan(b, {v}, dim, {b.constant_splat(0.0, TensorType::scalar(acc))},
                 [](hlo::Builder& s, const std::vector<Value>& e, const std::vector<Value>& l) {
                   return std::vector<Value>{s.add(e[0], l[0])};
                 })[0];
  return convert_to(b, r, out);
}

hlo::Value lower_cumprod(hlo::Builder& b, const Value& x, int64_t dim, ElementType out) {
  const ElementType acc = out == ElementType::kPred ? ElementType::kS64 : accumulation_type(out);
  Value v = convert_to(b, convert_to(b, x, out), acc);
  Value r = scan(b, {v}, dim, {b.constant_splat_int(1, TensorType::scalar(acc))},
                 [](hlo::Builder& s, const std::vector<Value>& e, const std::vector<Value>& l) {
                   return std::vector<Value>{s.multiply(e[0], l[0])};
                 })[0];
  return convert_to(b, r, out);
}

std::pair<Value, Value> lower_cummax_min(hlo::Builder& b, const Value& x, int64_t dim, bool is_max) {
  const TensorType index_type(ElementType::kS64, x.dims());
  if (x.rank() == 0) return {x, b.constant_splat_int(0, index_type)};
  const bool floating = is_floating(x.dtype());
  Value index = b.iota(index_type, dim);
  auto r = scan(b, {x, index}, dim,
                {extreme(b, x.dtype(), is_max), b.constant_splat_int(-1, TensorType::scalar(ElementType::kS64))},
                [is_max, floating](hlo::Builder& s, const std::vector<Value>& e, const std::vector<Value>& l) {
                  // The later one wins when it is NaN, or when neither is NaN and it is
                  // at least as large (small).
                  Value later = s.compare(l[0], e[0], is_max ? "GE" : "LE");
                  if (floating) later = s.or_(is_nan(s, l[0]), s.and_(s.not_(is_nan(s, e[0])), later));
                  return std::vector<Value>{s.select(later, l[0], e[0]), s.select(later, l[1], e[1])};
                });
  return {r[0], r[1]};
}

hlo::Value lower_logcumsumexp(hlo::Builder& b, const Value& x, int64_t dim) {
  const ElementType out = x.dtype();
  if (is_complex(out)) {
    // Each step as complex logaddexp(next, accumulated), from -inf + 0i (the
    // order CPU keeps the accumulated value in at equal infinite real parts).
    return scan(b, {x}, dim, {b.constant_splat_complex(-std::numeric_limits<double>::infinity(), 0,
                                                       TensorType::scalar(out))},
                [](hlo::Builder& s, const std::vector<Value>& e, const std::vector<Value>& l) {
                  return std::vector<Value>{complex_logaddexp(s, l[0], e[0])};
                })[0];
  }
  if (!is_floating(out)) throw hlo::HloError("logcumsumexp: a float type is required");
  const ElementType acc = accumulation_type(out);
  Value v = convert_to(b, x, acc);
  Value r = scan(b, {v}, dim, {b.constant_splat(-std::numeric_limits<double>::infinity(), TensorType::scalar(acc))},
                 [](hlo::Builder& s, const std::vector<Value>& e, const std::vector<Value>& l) {
                   // log(exp(a) + exp(b)) = max + log1p(exp(min - max)); equal infinities
                   // stay as they are (their difference would be NaN).
                   Value hi = s.maximum(e[0], l[0]);
                   Value lo = s.minimum(e[0], l[0]);
                   Value sum = s.add(s.log_plus_one(s.exponential(s.subtract(lo, hi))), hi);
                   Value regular = s.or_(s.compare(lo, hi, "NE"), s.is_finite(lo));
                   return std::vector<Value>{s.select(regular, sum, l[0])};
                 })[0];
  return convert_to(b, r, out);
}

}  // namespace torch_tpu::ops
