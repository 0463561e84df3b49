#include "ops/elementwise/incomplete_gamma.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

// The series and the fraction converge in O(sqrt(a)) steps where x is near
// a; this bounds the loop for any a the types can tell from a + 1.
constexpr int64_t kMaxIterations = 2000;

Value fill(hlo::Builder& b, double v, const Value& like) { return b.constant_splat(v, like.type()); }

}  // namespace

Value lower_incomplete_gamma(hlo::Builder& b, const Value& a, const Value& x, bool upper) {
  const double eps = a.dtype() == ElementType::kF64 ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon();
  const double tiny = a.dtype() == ElementType::kF64 ? 1e-300 : 1e-30;
  Value zero = fill(b, 0, a), one = fill(b, 1, a), inf = fill(b, INFINITY, a), nan = fill(b, NAN, a);
  Value use_series = b.compare(x, b.add(a, one), "LT");
  // Safe arguments where a special case decides (a, x > 0 and finite).
  Value regular = b.and_(b.and_(b.compare(a, zero, "GT"), b.compare(x, zero, "GT")),
                         b.and_(b.compare(a, inf, "LT"), b.compare(x, inf, "LT")));
  Value sa = b.select(regular, a, one), sx = b.select(regular, x, one);
  // Carried: i, done, series (sum, term), fraction (h, c, d, bcoef).
  Value bcoef0 = b.add(b.subtract(sx, sa), one);
  Value d0 = b.divide(one, b.select(b.compare(b.abs(bcoef0), fill(b, tiny, a), "LT"), fill(b, tiny, a), bcoef0));
  Value term0 = b.divide(one, sa);
  Values out = b.while_loop(
      {b.constant_splat_int(1, TensorType::scalar(ElementType::kS32)), b.not_(regular), term0, term0, d0,
       fill(b, 1.0 / tiny, a), d0, bcoef0},
      [](hlo::Builder& c, const Values& v) {
        return Values{c.and_(c.compare(v[0], c.constant_splat_int(kMaxIterations, v[0].type()), "LT"),
                             c.not_(all_true(c, v[1])))};
      },
      [&](hlo::Builder& c, const Values& v) {
        Value i = c.convert(v[0], sa.dtype());
        Value ib = c.broadcast_in_dim(i, sa.dims(), {});
        // Series: term *= x / (a + i); sum += term.
        Value term = c.multiply(v[3], c.divide(sx, c.add(sa, ib)));
        Value sum = c.add(v[2], term);
        Value series_done = c.compare(c.abs(term), c.multiply(c.abs(sum), fill(c, eps, sum)), "LT");
        // Lentz: an = -i (i - a); b += 2.
        Value an = c.negate(c.multiply(ib, c.subtract(ib, sa)));
        Value bcoef = c.add(v[7], fill(c, 2, sa));
        Value small = fill(c, tiny, sa);
        auto guard = [&](const Value& z) { return c.select(c.compare(c.abs(z), small, "LT"), small, z); };
        Value d = c.divide(fill(c, 1, sa), guard(c.add(c.multiply(an, v[6]), bcoef)));
        Value cc = guard(c.add(bcoef, c.divide(an, v[5])));
        Value del = c.multiply(d, cc);
        Value h = c.multiply(v[4], del);
        Value fraction_done = c.compare(c.abs(c.subtract(del, fill(c, 1, del))), fill(c, eps, del), "LT");
        Value done = c.or_(v[1], c.select(use_series, series_done, fraction_done));
        // Finished elements keep their values.
        auto keep = [&](const Value& next, const Value& old) { return c.select(v[1], old, next); };
        return Values{c.add(v[0], c.constant_splat_int(1, v[0].type())), done, keep(sum, v[2]), keep(term, v[3]),
                      keep(h, v[4]), keep(cc, v[5]), keep(d, v[6]), keep(bcoef, v[7])};
      });
  // log(x^a e^-x / Gamma(a)). Directly, a log x - x - lgamma(a) cancels
  // terms of size a log x; from a = 10 on it is rearranged with Stirling's
  // series for lgamma, a (log1p(t) - t) + log(a) / 2 - log(2 pi) / 2 -
  // (1 / (12 a) - 1 / (360 a^3) + ...) with t = (x - a) / a, whose terms
  // are of the result's own size.
  Value direct = b.subtract(b.subtract(b.multiply(sa, b.log(sx)), sx), b.unary("chlo.lgamma", sa));
  Value t = b.divide(b.subtract(sx, sa), sa);
  Value inv = b.divide(one, sa), inv2 = b.multiply(inv, inv);
  Value series = b.multiply(inv, b.add(fill(b, 1.0 / 12, a),
                                       b.multiply(inv2, b.add(fill(b, -1.0 / 360, a),
                                                              b.multiply(inv2, b.add(fill(b, 1.0 / 1260, a),
                                                                                     b.multiply(inv2, fill(b, -1.0 / 1680, a))))))));
  Value stirling = b.subtract(b.add(b.multiply(sa, b.subtract(b.log_plus_one(t), t)),
                                    b.multiply(fill(b, 0.5, a), b.log(sa))),
                              b.add(fill(b, 0.5 * std::log(2 * M_PI), a), series));
  Value log_prefactor = b.select(b.compare(sa, fill(b, 10, a), "GE"), stirling, direct);
  Value prefactor = b.exponential(log_prefactor);
  Value p_series = b.multiply(out[2], prefactor);
  Value q_fraction = b.multiply(out[4], prefactor);
  Value p = b.select(use_series, p_series, b.subtract(one, q_fraction));
  Value q = b.select(use_series, b.subtract(one, p_series), q_fraction);
  Value result = upper ? q : p;
  // CPU's special cases: NaN for negative or NaN arguments and for a = x = 0
  // or a = x = inf; P = 1 (Q = 0) for a = 0 < x or x = inf; P = 0 (Q = 1)
  // for x = 0 < a or a = inf.
  Value lower_value = fill(b, upper ? 1 : 0, a), upper_value = fill(b, upper ? 0 : 1, a);
  Value a0 = b.compare(a, zero, "EQ"), x0 = b.compare(x, zero, "EQ");
  Value ainf = b.compare(a, inf, "EQ"), xinf = b.compare(x, inf, "EQ");
  result = b.select(b.and_(ainf, b.not_(xinf)), lower_value, result);
  result = b.select(b.and_(xinf, b.not_(ainf)), upper_value, result);
  result = b.select(b.and_(x0, b.not_(a0)), lower_value, result);
  result = b.select(b.and_(a0, b.not_(x0)), upper_value, result);
  Value invalid = b.or_(b.or_(b.compare(a, zero, "LT"), b.compare(x, zero, "LT")),
                        b.or_(b.and_(a0, x0), b.and_(ainf, xinf)));
  invalid = b.or_(invalid, b.or_(b.compare(a, a, "NE"), b.compare(x, x, "NE")));
  return b.select(invalid, nan, result);
}

}  // namespace torch_tpu::ops
