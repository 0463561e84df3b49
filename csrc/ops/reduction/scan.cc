#include "ops/reduction/scan.h"

#include <limits>

#include "ops/broadcast.h"
#include "ops/elementwise/binary_math.h"

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

// Scans of more than this many elements go by blocks of it.
constexpr int64_t kBlock = 32;

// A long scan by blocks: each block of kBlock scanned on its own, the
// blocks' totals scanned (the same way, recursively), and each block
// combined with the total of the blocks before it. log2(kBlock) whole-array
// steps instead of log2(n): the doubling scan's steps each make a new array
// the size of the input, which XLA keeps (about 200 bytes per element of a
// 16M-element nonzero), and do n log2(n) work.
std::vector<Value> blocked_scan(hlo::Builder& b, const std::vector<Value>& xs, int64_t dim,
                                const std::vector<Value>& identities, const ScanCombine& combine) {
  const std::vector<int64_t>& dims = xs[0].dims();
  const int64_t n = dims[dim], blocks = (n + kBlock - 1) / kBlock;
  std::vector<int64_t> zeros(dims.size(), 0), tail = zeros;
  tail[dim] = blocks * kBlock - n;
  std::vector<int64_t> split = dims;  // [..., blocks, kBlock, ...]
  split[dim] = blocks;
  split.insert(split.begin() + dim + 1, kBlock);
  std::vector<Value> within;
  for (size_t i = 0; i < xs.size(); ++i) {
    within.push_back(b.reshape(b.pad(xs[i], identities[i], zeros, tail, zeros), split));
  }
  within = doubling_scan(b, within, dim + 1, identities, combine);
  // Each block's total, then the totals of the blocks before each block.
  std::vector<int64_t> starts(split.size(), 0), limits = split, strides(split.size(), 1);
  starts[dim + 1] = kBlock - 1;
  std::vector<int64_t> per_block = split;
  per_block.erase(per_block.begin() + dim + 1);
  std::vector<Value> totals;
  for (const Value& w : within) totals.push_back(b.reshape(b.slice(w, starts, limits, strides), per_block));
  totals = scan(b, totals, dim, identities, combine);
  std::vector<int64_t> before = zeros, drop_last = zeros;
  before[dim] = 1;
  drop_last[dim] = -1;
  std::vector<Value> earlier;
  std::vector<int64_t> spread(per_block.size());
  for (size_t d = 0; d < spread.size(); ++d) spread[d] = d < static_cast<size_t>(dim + 1) ? d : d + 1;
  for (size_t i = 0; i < totals.size(); ++i) {
    Value shifted = b.pad(totals[i], identities[i], before, drop_last, zeros);
    earlier.push_back(b.broadcast_in_dim(shifted, split, spread));
  }
  std::vector<Value> combined = combine(b, earlier, within);
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
  if (x0.dims()[dim] > 2 * kBlock) return blocked_scan(b, xs, dim, identities, combine);
  return doubling_scan(b, xs, dim, identities, combine);
}

hlo::Value lower_cumsum(hlo::Builder& b, const Value& x, int64_t dim, ElementType out) {
  const ElementType acc = out == ElementType::kPred ? ElementType::kS64 : accumulation_type(out);
  Value v = convert_to(b, convert_to(b, x, out), acc);
  Value r = scan(b, {v}, dim, {b.constant_splat_int(0, TensorType::scalar(acc))},
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
