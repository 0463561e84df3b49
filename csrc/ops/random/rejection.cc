#include "ops/random/rejection.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/indexing/gather_scatter.h"
#include "ops/random/distributions.h"
#include "ops/random/uniform.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

constexpr int64_t kMaxRounds = 64;

Value u64(hlo::Builder& b, uint64_t v) { return b.constant_splat_uint(v, TensorType::scalar(ElementType::kU64)); }
Value i32(hlo::Builder& b, int64_t v) { return b.constant_splat_int(v, TensorType::scalar(ElementType::kS32)); }

// The loop's own key: the generator's seed and offset mixed (a
// multiply-xorshift step), so every op draws from a stream of its own.
Value stream_key(hlo::Builder& b, const Value& seed, const Value& offset) {
  Value k = b.xor_(b.multiply(seed, u64(b, 0x9E3779B97F4A7C15ull)), b.add(offset, u64(b, 0xD1B54A32D192ED03ull)));
  k = b.xor_(k, b.shift_right_logical(k, u64(b, 31)));
  return b.multiply(k, u64(b, 0xBF58476D1CE4E5B9ull));
}

// The first counter of round r when each round draws `per_round` counters
// for each of `n` elements.
Value round_offset(hlo::Builder& b, const Value& round, int64_t per_round, int64_t n) {
  return b.multiply(b.convert(round, ElementType::kU64), u64(b, static_cast<uint64_t>(per_round * n)));
}

Value fill(hlo::Builder& b, double v, const Value& like) { return b.constant_splat(v, like.type()); }

double smallest_normal(ElementType t) {
  switch (t) {
    case ElementType::kF64: return std::numeric_limits<double>::min();
    case ElementType::kF16: return 6.103515625e-05;
    case ElementType::kBF16:
    case ElementType::kF32:
    default: return std::numeric_limits<float>::min();
  }
}

// The largest value below 1: CPU keeps Dirichlet samples under 1 so that
// log(1 - x) stays finite.
double largest_below_one(ElementType t) {
  switch (t) {
    case ElementType::kF64: return 1.0 - std::ldexp(1.0, -53);
    case ElementType::kF16: return 1.0 - std::ldexp(1.0, -11);
    case ElementType::kBF16: return 1.0 - std::ldexp(1.0, -8);
    case ElementType::kF32:
    default: return 1.0 - std::ldexp(1.0, -24);
  }
}

// Gamma(alpha) in alpha's (compute) type, without the final clamp.
Value gamma_samples(hlo::Builder& b, const Value& key, const Value& alpha) {
  const std::vector<int64_t>& dims = alpha.dims();
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  const ElementType ct = alpha.dtype();
  Value boost = b.compare(alpha, fill(b, 1, alpha), "LT");
  Value a = b.select(boost, b.add(alpha, fill(b, 1, alpha)), alpha);
  Value d = b.subtract(a, fill(b, 1.0 / 3.0, a));
  Value c = b.rsqrt(b.multiply(fill(b, 9, d), d));
  Value nan = fill(b, std::numeric_limits<double>::quiet_NaN(), alpha);
  // NaN and negative shapes are done from the start, as NaN.
  Value done0 = b.not_(b.compare(alpha, fill(b, 0, alpha), "GE"));
  Values out = b.while_loop(
      {i32(b, 0), done0, nan},
      [](hlo::Builder& cb, const Values& v) {
        return Values{cb.and_(cb.compare(v[0], i32(cb, kMaxRounds), "LT"), cb.not_(all_true(cb, v[1])))};
      },
      [&](hlo::Builder& cb, const Values& v) {
        Value off = round_offset(cb, v[0], 3, n);
        Value x = standard_normal(cb, key, off, dims, ct);
        Value u = unit_uniform(cb, key, cb.add(off, u64(cb, static_cast<uint64_t>(2 * n))), dims, ct, 1,
                               UnitInterval::kOpen)[0];
        Value one = fill(cb, 1, x);
        Value t = cb.add(one, cb.multiply(c, x));
        Value vv = cb.multiply(cb.multiply(t, t), t);
        Value positive = cb.compare(vv, fill(cb, 0, vv), "GT");
        Value safe_v = cb.select(positive, vv, one);
        // log u < x^2 / 2 + d - d v + d log v
        Value bound = cb.add(cb.subtract(cb.add(cb.multiply(fill(cb, 0.5, x), cb.multiply(x, x)), d),
                                         cb.multiply(d, safe_v)),
                             cb.multiply(d, cb.log(safe_v)));
        Value accept = cb.and_(positive, cb.compare(cb.log(u), bound, "LT"));
        Value take = cb.and_(accept, cb.not_(v[1]));
        return Values{cb.add(v[0], i32(cb, 1)), cb.or_(v[1], accept), cb.select(take, cb.multiply(d, vv), v[2])};
      });
  // Below shape 1: Gamma(alpha) = Gamma(alpha + 1) * U^(1 / alpha), with U
  // drawn after the loop's rounds.
  Value u = unit_uniform(b, key, round_offset(b, i32(b, kMaxRounds), 3, n), dims, ct, 1, UnitInterval::kOpen)[0];
  Value boosted = b.multiply(out[2], b.power(u, b.divide(fill(b, 1, alpha), alpha)));
  return b.select(boost, boosted, out[2]);
}

}  // namespace

Value lower_standard_gamma(hlo::Builder& b, const Value& seed, const Value& offset, const Value& alpha,
                           ElementType out) {
  if (TensorType(out, alpha.dims()).num_elements() == 0) return b.constant_splat(0, TensorType(out, alpha.dims()));
  const ElementType ct = random_compute_type(out);
  Value g = gamma_samples(b, stream_key(b, seed, offset), convert_to(b, alpha, ct));
  Value result = convert_to(b, g, out);
  // CPU's std::max(smallest normal, sample): a NaN sample (a concentration
  // that is not positive) gives the smallest normal too.
  Value tiny = b.constant_splat(smallest_normal(out), result.type());
  return b.select(b.compare(result, tiny, "GT"), result, tiny);
}

Value lower_sample_dirichlet(hlo::Builder& b, const Value& seed, const Value& offset, const Value& alpha,
                             ElementType out) {
  if (TensorType(out, alpha.dims()).num_elements() == 0) return b.constant_splat(0, TensorType(out, alpha.dims()));
  // Gammas in f64 as CPU does, each at least the smallest normal so the sum
  // is never 0.
  Value g = gamma_samples(b, stream_key(b, seed, offset), convert_to(b, alpha, ElementType::kF64));
  g = b.maximum(g, fill(b, std::numeric_limits<double>::min(), g));
  const int64_t last = alpha.rank() - 1;
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < last; ++d) kept.push_back(d);
  Value sum = b.reduce({g}, {b.constant_splat(0, TensorType::scalar(ElementType::kF64))}, {last},
                       [](hlo::Builder& r, const Values& a) { return Values{r.add(a[0], a[1])}; })[0];
  Value ratio = b.divide(g, b.broadcast_in_dim(sum, g.dims(), kept));
  Value result = convert_to(b, ratio, out);
  result = b.maximum(result, b.constant_splat(smallest_normal(out), result.type()));
  return b.minimum(result, b.constant_splat(largest_below_one(out), result.type()));
}

Value lower_poisson(hlo::Builder& b, const Value& seed, const Value& offset, const Value& rate, ElementType out) {
  const std::vector<int64_t>& dims = rate.dims();
  if (TensorType(out, dims).num_elements() == 0) return b.constant_splat(0, TensorType(out, dims));
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  // PyTorch's CPU sampler works in double.
  const ElementType ct = ElementType::kF64;
  Value lam = convert_to(b, rate, ct);
  Value key = stream_key(b, seed, offset);
  Value large = b.compare(lam, fill(b, 10, lam), "GE");
  // PTRS constants (meaningful where large).
  Value slam = b.sqrt(lam), loglam = b.log(lam);
  Value pb = b.add(fill(b, 0.931, lam), b.multiply(fill(b, 2.53, lam), slam));
  Value pa = b.add(fill(b, -0.059, lam), b.multiply(fill(b, 0.02483, lam), pb));
  Value invalpha = b.add(fill(b, 1.1239, lam), b.divide(fill(b, 1.1328, lam), b.subtract(pb, fill(b, 3.4, lam))));
  Value vr = b.subtract(fill(b, 0.9277, lam), b.divide(fill(b, 3.6224, lam), b.subtract(pb, fill(b, 2, lam))));
  Value enlam = b.exponential(b.negate(lam));
  // Zero rate gives 0 at once; NaN (or negative) rates are done as NaN.
  Value bad = b.not_(b.compare(lam, fill(b, 0, lam), "GE"));
  Value zero = b.compare(lam, fill(b, 0, lam), "EQ");
  Value nan = fill(b, std::numeric_limits<double>::quiet_NaN(), lam);
  Value init = b.select(zero, fill(b, 0, lam), nan);
  // Carried: round, done, result, Knuth's running product and count.
  Values outs = b.while_loop(
      {i32(b, 0), b.or_(bad, zero), init, fill(b, 1, lam), fill(b, 0, lam)},
      [](hlo::Builder& cb, const Values& v) {
        return Values{cb.and_(cb.compare(v[0], i32(cb, kMaxRounds), "LT"), cb.not_(all_true(cb, v[1])))};
      },
      [&](hlo::Builder& cb, const Values& v) {
        Values u = unit_uniform(cb, key, round_offset(cb, v[0], 2, n), dims, ct, 2);
        const Value& done = v[1];
        // Knuth: multiply uniforms until the product falls to e^-rate.
        Value prod = cb.multiply(v[3], u[0]);
        Value knuth_stop = cb.not_(cb.compare(prod, enlam, "GT"));
        Value count = cb.select(knuth_stop, v[4], cb.add(v[4], fill(cb, 1, lam)));
        // PTRS.
        Value uu = cb.subtract(u[0], fill(cb, 0.5, lam));
        Value us = cb.subtract(fill(cb, 0.5, lam), cb.abs(uu));
        Value k = cb.floor(cb.add(cb.add(cb.multiply(cb.add(cb.divide(cb.multiply(fill(cb, 2, lam), pa), us), pb), uu),
                                         lam),
                                  fill(cb, 0.43, lam)));
        Value quick = cb.and_(cb.compare(us, fill(cb, 0.07, lam), "GE"), cb.compare(u[1], vr, "LE"));
        Value reject = cb.or_(cb.compare(k, fill(cb, 0, lam), "LT"),
                              cb.and_(cb.compare(us, fill(cb, 0.013, lam), "LT"), cb.compare(u[1], us, "GT")));
        Value lhs = cb.subtract(cb.add(cb.log(u[1]), cb.log(invalpha)),
                                cb.log(cb.add(cb.divide(pa, cb.multiply(us, us)), pb)));
        Value safe_k = cb.maximum(k, fill(cb, 0, k));
        Value rhs = cb.subtract(cb.add(cb.negate(lam), cb.multiply(safe_k, loglam)),
                                cb.unary("chlo.lgamma", cb.add(safe_k, fill(cb, 1, k))));
        Value ptrs_accept = cb.or_(quick, cb.and_(cb.not_(reject), cb.compare(lhs, rhs, "LE")));
        Value accept = cb.select(large, ptrs_accept, knuth_stop);
        Value value = cb.select(large, k, v[4]);
        Value take = cb.and_(accept, cb.not_(done));
        return Values{cb.add(v[0], i32(cb, 1)), cb.or_(done, accept), cb.select(take, value, v[2]), prod, count};
      });
  return convert_to(b, outs[2], out);
}

namespace {

// log(k!) minus its Stirling approximation (k + 1/2) log(k + 1) - (k + 1)
// + log(2 pi) / 2, the correction BTRS's bound uses.
Value stirling_tail(hlo::Builder& b, const Value& k) {
  Value k1 = b.add(k, fill(b, 1, k));
  Value stirling = b.add(b.subtract(b.multiply(b.add(k, fill(b, 0.5, k)), b.log(k1)), k1),
                         fill(b, 0.5 * std::log(2 * 3.14159265358979323846), k));
  return b.subtract(b.unary("chlo.lgamma", k1), stirling);
}

}  // namespace

Value lower_binomial(hlo::Builder& b, const Value& seed, const Value& offset, const Value& count, const Value& prob,
                     ElementType out) {
  const std::vector<int64_t>& dims = prob.dims();
  if (TensorType(out, dims).num_elements() == 0) return b.constant_splat(0, TensorType(out, dims));
  int64_t n_elems = 1;
  for (int64_t d : dims) n_elems *= d;
  const ElementType ct = ElementType::kF64;
  Value n = convert_to(b, count, ct), p0 = convert_to(b, prob, ct);
  Value key = stream_key(b, seed, offset);
  // Sample with q = min(p, 1 - p); flip back at the end.
  Value flip = b.compare(p0, fill(b, 0.5, p0), "GT");
  Value p = b.select(flip, b.subtract(fill(b, 1, p0), p0), p0);
  Value use_btrs = b.compare(b.multiply(n, p), fill(b, 10, n), "GE");
  Value trivial_zero = b.or_(b.not_(b.compare(n, fill(b, 0, n), "GT")), b.not_(b.compare(p0, fill(b, 0, p0), "GT")));
  Value trivial_all = b.and_(b.not_(trivial_zero), b.not_(b.compare(p0, fill(b, 1, p0), "LT")));
  Value invalid = b.or_(b.compare(n, n, "NE"), b.compare(p0, p0, "NE"));
  // BTRS constants (meaningful where used).
  Value q1 = b.subtract(fill(b, 1, p), p);
  Value stddev = b.sqrt(b.multiply(b.multiply(n, p), q1));
  Value bb = b.add(fill(b, 1.15, p), b.multiply(fill(b, 2.53, p), stddev));
  Value aa = b.add(b.add(fill(b, -0.0873, p), b.multiply(fill(b, 0.0248, p), bb)), b.multiply(fill(b, 0.01, p), p));
  Value cc = b.add(b.multiply(n, p), fill(b, 0.5, p));
  Value vr = b.subtract(fill(b, 0.92, p), b.divide(fill(b, 4.2, p), bb));
  Value r = b.divide(p, q1);
  Value alpha = b.multiply(b.add(fill(b, 2.83, p), b.divide(fill(b, 5.1, p), bb)), stddev);
  Value m = b.floor(b.multiply(b.add(n, fill(b, 1, n)), p));
  Value logq = b.log_plus_one(b.negate(p));
  Value done0 = b.or_(b.or_(trivial_zero, trivial_all), invalid);
  // Carried: round, done, result, inversion's running sum and count.
  Values outs = b.while_loop(
      {i32(b, 0), done0, fill(b, 0, n), fill(b, 0, n), fill(b, 0, n)},
      [](hlo::Builder& cb, const Values& v) {
        return Values{cb.and_(cb.compare(v[0], i32(cb, kMaxRounds), "LT"), cb.not_(all_true(cb, v[1])))};
      },
      [&](hlo::Builder& cb, const Values& v) {
        Values u = unit_uniform(cb, key, round_offset(cb, v[0], 2, n_elems), dims, ct, 2, UnitInterval::kOpen);
        // Inversion: add geometric jumps until they pass count.
        Value jump = cb.ceil(cb.divide(cb.log(u[0]), logq));
        Value sum = cb.add(v[3], jump);
        Value passed = cb.compare(sum, n, "GT");
        Value jumps = cb.select(passed, v[4], cb.add(v[4], fill(cb, 1, n)));
        // BTRS.
        Value uu = cb.subtract(u[0], fill(cb, 0.5, p));
        Value us = cb.subtract(fill(cb, 0.5, p), cb.abs(uu));
        Value k = cb.floor(cb.add(cb.multiply(cb.add(cb.divide(cb.multiply(fill(cb, 2, p), aa), us), bb), uu), cc));
        Value outside = cb.or_(cb.compare(k, fill(cb, 0, k), "LT"), cb.compare(k, n, "GT"));
        Value quick = cb.and_(cb.compare(us, fill(cb, 0.07, p), "GE"), cb.compare(u[1], vr, "LE"));
        Value ks = cb.minimum(cb.maximum(k, fill(cb, 0, k)), n);
        Value lv = cb.log(cb.divide(cb.multiply(u[1], alpha), cb.add(cb.divide(aa, cb.multiply(us, us)), bb)));
        Value one = fill(cb, 1, p), half = fill(cb, 0.5, p);
        Value nm1 = cb.add(cb.subtract(n, m), one), nk1 = cb.add(cb.subtract(n, ks), one);
        Value bound = cb.add(
            cb.add(cb.add(cb.multiply(cb.add(m, half), cb.log(cb.divide(cb.add(m, one), cb.multiply(r, nm1)))),
                          cb.multiply(cb.add(n, one), cb.log(cb.divide(nm1, nk1)))),
                   cb.multiply(cb.add(ks, half), cb.log(cb.divide(cb.multiply(r, nk1), cb.add(ks, one))))),
            cb.subtract(cb.subtract(cb.add(stirling_tail(cb, m), stirling_tail(cb, cb.subtract(n, m))), stirling_tail(cb, ks)),
                        stirling_tail(cb, cb.subtract(n, ks))));
        Value btrs_accept = cb.and_(cb.not_(outside), cb.or_(quick, cb.compare(lv, bound, "LE")));
        Value accept = cb.select(use_btrs, btrs_accept, passed);
        Value value = cb.select(use_btrs, k, v[4]);
        Value take = cb.and_(accept, cb.not_(v[1]));
        return Values{cb.add(v[0], i32(cb, 1)), cb.or_(v[1], accept), cb.select(take, value, v[2]), sum, jumps};
      });
  Value x = b.select(flip, b.subtract(n, outs[2]), outs[2]);
  x = b.select(trivial_zero, fill(b, 0, x), b.select(trivial_all, n, x));
  x = b.select(invalid, fill(b, std::numeric_limits<double>::quiet_NaN(), x), x);
  // Not done within the rounds (practically never): NaN, not a biased value.
  x = b.select(outs[1], x, fill(b, std::numeric_limits<double>::quiet_NaN(), x));
  return convert_to(b, x, out);
}

}  // namespace torch_tpu::ops
