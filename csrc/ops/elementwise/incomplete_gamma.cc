#include "ops/elementwise/incomplete_gamma.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/indexing/gather_scatter.h"
#include "ops/elementwise/parameter_slope.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

// The series and the fraction converge in O(sqrt(a)) steps where x is near
// a (some 30 000 at a = 1e7 in float64); the loop runs only as long as its
// slowest element needs. Beyond a = 1e8 the gradient takes the
// Wilson-Hilferty form instead.
constexpr int64_t kMaxIterations = 100000;

Value fill(hlo::Builder& b, double v, const Value& like) { return b.constant_splat(v, like.type()); }

// log(x / a), accurate both near x = a (as log1p((x - a) / a)) and far
// from it, where (x - a) / a rounds to -1 once x / a is below eps.
Value log_ratio(hlo::Builder& b, const Value& x, const Value& a) {
  Value t = b.divide(b.subtract(x, a), a);
  return b.select(b.compare(t, fill(b, -0.5, t), "GT"), b.log_plus_one(t), b.subtract(b.log(x), b.log(a)));
}

// log(x / a) - (x - a) / a without the cancellation of its two terms near
// x = a (the Stirling prefactor multiplies it by a): the Taylor series of
// log1p(t) - t below |t| = 1/4.
Value log_ratio_minus_excess(hlo::Builder& b, const Value& x, const Value& a) {
  Value t = b.divide(b.subtract(x, a), a);
  const int terms = t.dtype() == ElementType::kF64 ? 26 : 12;  // 4^-k / k below the type's eps
  Value poly = fill(b, (terms % 2 == 0 ? -1.0 : 1.0) / terms, t);
  for (int k = terms - 1; k >= 2; --k) poly = b.add(fill(b, (k % 2 == 0 ? -1.0 : 1.0) / k, t), b.multiply(t, poly));
  Value series = b.multiply(b.multiply(t, t), poly);
  Value direct = b.subtract(log_ratio(b, x, a), t);
  return b.select(b.compare(b.abs(t), fill(b, 0.25, t), "LT"), series, direct);
}

// d/da of log_prefactor: log x - digamma(a + 1) on the series side, log x
// - digamma(a) on the fraction's. From a = 10 on log x - digamma(a + 1) is
// log(x / a) - 1 / (2a) + 1 / (12 a^2) - 1 / (120 a^4) + 1 / (252 a^6)
// (digamma's asymptotic series), free of the cancellation between log x
// and digamma.
Value log_prefactor_slope(hlo::Builder& b, const Value& a, const Value& x, const Value& use_series) {
  Value one = fill(b, 1, a);
  Value direct = b.subtract(b.log(x), b.unary("chlo.digamma", b.add(a, one)));
  Value inv = b.divide(one, a), inv2 = b.multiply(inv, inv);
  Value tail = b.multiply(inv2, b.add(fill(b, 1.0 / 12, a),
                                      b.multiply(inv2, b.add(fill(b, -1.0 / 120, a),
                                                             b.multiply(inv2, fill(b, 1.0 / 252, a))))));
  Value asymptotic = b.add(b.subtract(log_ratio(b, x, a), b.multiply(fill(b, 0.5, a), inv)), tail);
  Value slope = b.select(b.compare(a, fill(b, 10, a), "GE"), asymptotic, direct);
  // digamma(a) = digamma(a + 1) - 1 / a.
  return b.select(use_series, slope, b.add(slope, inv));
}

}  // namespace

Value series_side(hlo::Builder& b, const Value& a, const Value& x) {
  return b.compare(x, b.add(a, fill(b, 1, a)), "LT");
}

GammaTail lower_gamma_tail(hlo::Builder& b, const Value& a, const Value& x, const Value& use_series) {
  const double eps = a.dtype() == ElementType::kF64 ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon();
  const double tiny = a.dtype() == ElementType::kF64 ? 1e-300 : 1e-30;
  Value one = fill(b, 1, a);
  // Carried: i, done, series (sum, term), fraction (h, c, d, bcoef).
  Value bcoef0 = b.add(b.subtract(x, a), one);
  Value d0 = b.divide(one, b.select(b.compare(b.abs(bcoef0), fill(b, tiny, a), "LT"), fill(b, tiny, a), bcoef0));
  Values out = b.while_loop(
      {b.constant_splat_int(1, TensorType::scalar(ElementType::kS32)), b.constant_splat(0, TensorType(ElementType::kPred, a.dims())),
       one, one, d0, fill(b, 1.0 / tiny, a), d0, bcoef0},
      [](hlo::Builder& c, const Values& v) {
        return Values{c.and_(c.compare(v[0], c.constant_splat_int(kMaxIterations, v[0].type()), "LT"),
                             c.not_(all_true(c, v[1])))};
      },
      [&](hlo::Builder& c, const Values& v) {
        Value i = c.convert(v[0], a.dtype());
        Value ib = c.broadcast_in_dim(i, a.dims(), {});
        // Series: term *= x / (a + i); sum += term.
        Value term = c.multiply(v[3], c.divide(x, c.add(a, ib)));
        Value sum = c.add(v[2], term);
        Value series_done = c.compare(c.abs(term), c.multiply(c.abs(sum), fill(c, eps, sum)), "LT");
        // Lentz: an = -i (i - a); b += 2.
        Value an = c.negate(c.multiply(ib, c.subtract(ib, a)));
        Value bcoef = c.add(v[7], fill(c, 2, a));
        Value small = fill(c, tiny, a);
        auto guard = [&](const Value& z) { return c.select(c.compare(c.abs(z), small, "LT"), small, z); };
        Value d = c.divide(fill(c, 1, a), guard(c.add(c.multiply(an, v[6]), bcoef)));
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
  // log(x^a e^-x / Gamma(a + 1)). Directly, a log x - x - lgamma(a + 1)
  // cancels terms of size a log x; from a = 10 on it is rearranged with
  // Stirling's series for lgamma, a (log(x / a) - (x - a) / a) - log(a) / 2
  // - log(2 pi) / 2 - (1 / (12 a) - 1 / (360 a^3) + ...), whose terms are of
  // the result's own size.
  Value direct = b.subtract(b.subtract(b.multiply(a, b.log(x)), x), b.unary("chlo.lgamma", b.add(a, one)));
  Value inv = b.divide(one, a), inv2 = b.multiply(inv, inv);
  Value series = b.multiply(inv, b.add(fill(b, 1.0 / 12, a),
                                       b.multiply(inv2, b.add(fill(b, -1.0 / 360, a),
                                                              b.multiply(inv2, b.add(fill(b, 1.0 / 1260, a),
                                                                                     b.multiply(inv2, fill(b, -1.0 / 1680, a))))))));
  Value stirling = b.subtract(b.subtract(b.multiply(a, log_ratio_minus_excess(b, x, a)),
                                         b.multiply(fill(b, 0.5, a), b.log(a))),
                              b.add(fill(b, 0.5 * std::log(2 * M_PI), a), series));
  Value log_prefactor = b.select(b.compare(a, fill(b, 10, a), "GE"), stirling, direct);
  // The series summed x^n / ((a + 1) .. (a + n)); the fraction's prefactor
  // is x^a e^-x / Gamma(a), a times larger.
  GammaTail tail;
  tail.log_prefactor = b.select(use_series, log_prefactor, b.add(log_prefactor, b.log(a)));
  tail.factor = b.select(use_series, out[2], out[4]);
  return tail;
}

Value lower_incomplete_gamma(hlo::Builder& b, const Value& a, const Value& x, bool upper) {
  Value zero = fill(b, 0, a), one = fill(b, 1, a), inf = fill(b, INFINITY, a), nan = fill(b, NAN, a);
  // Safe arguments where a special case decides (a, x > 0 and finite).
  Value regular = b.and_(b.and_(b.compare(a, zero, "GT"), b.compare(x, zero, "GT")),
                         b.and_(b.compare(a, inf, "LT"), b.compare(x, inf, "LT")));
  Value sa = b.select(regular, a, one), sx = b.select(regular, x, one);
  Value use_series = series_side(b, sa, sx);
  const GammaTail tail = lower_gamma_tail(b, sa, sx, use_series);
  Value smaller = b.multiply(tail.factor, b.exponential(tail.log_prefactor));
  Value p = b.select(use_series, smaller, b.subtract(one, smaller));
  Value q = b.select(use_series, b.subtract(one, smaller), smaller);
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

Value lower_standard_gamma_grad(hlo::Builder& b, const Value& alpha, const Value& x) {
  const bool f64 = alpha.dtype() == ElementType::kF64;
  Value zero = fill(b, 0, alpha), one = fill(b, 1, alpha), inf = fill(b, INFINITY, alpha);
  Value regular = b.and_(b.and_(b.compare(alpha, zero, "GT"), b.compare(x, zero, "GT")),
                         b.and_(b.compare(alpha, inf, "LT"), b.compare(x, inf, "LT")));
  Value a = b.select(regular, alpha, one), sx = b.select(regular, x, one);

  // d log(smaller tail) / da = d log_prefactor / da (in closed form) +
  // d log(factor) / da. The factor (the series' sum or the fraction's
  // value) is smooth in a, on a scale of 1 or of the standard deviation
  // sqrt(a); its derivative is a five-point difference, every point on the
  // centre's side. The relative step balances truncation (step^4) against
  // rounding (eps / step).
  const double relative_step = f64 ? 1e-3 : 0.05;
  Value h = b.multiply(fill(b, relative_step, a), b.maximum(one, b.sqrt(a)));
  // a - 2h may be negative for small a: the series and the fraction are
  // defined there.
  const FivePointStencil stencil(b, a, h);
  Value lower = series_side(b, a, sx);
  const GammaTail tail = lower_gamma_tail(b, stencil.points(), stencil.stack(sx), stencil.stack(lower));
  Value factor_slope = stencil.slope(b.log(tail.factor));
  Value d = b.add(log_prefactor_slope(b, a, sx, lower), factor_slope);
  // With pdf = x^(a-1) e^-x / Gamma(a): P / pdf = factor x / a, Q / pdf =
  // factor x at the centre; dx/da = -(dP/da) / pdf = +(dQ/da) / pdf.
  Value centre = stencil.row(tail.factor, 0);
  Value ratio = b.select(lower, b.divide(b.multiply(centre, sx), a), b.multiply(centre, sx));
  Value grad = b.multiply(ratio, b.select(lower, b.negate(d), d));

  // Wilson-Hilferty: (x / a)^(1/3) ~ Normal(1 - 1 / (9a), 1 / (9a)); at a
  // fixed normal quantile, dx/da = -w^3 / 2 + 3 w^2 / 2 + w^2 / (6a).
  Value w = b.cbrt(b.divide(sx, a)), w2 = b.multiply(w, w);
  Value wilson_hilferty = b.add(b.add(b.multiply(fill(b, -0.5, a), b.multiply(w2, w)), b.multiply(fill(b, 1.5, a), w2)),
                                b.divide(w2, b.multiply(fill(b, 6, a), a)));
  // Its relative error falls from 2e-6 at a = 1e4 to 3e-9 at 1e5: past 1e4
  // it beats float32's sums over thousands of terms; float64 keeps the
  // difference up to the loop's reach.
  grad = b.select(b.compare(a, fill(b, f64 ? 1e8 : 1e4, a), "GE"), wilson_hilferty, grad);

  // 0 where x <= 0 (whatever a), as on CPU; NaN for a <= 0, infinite or
  // NaN arguments (CPU's series gives 0 or +-inf for some of them).
  Value result = b.select(regular, grad, fill(b, NAN, alpha));
  return b.select(b.compare(x, zero, "LE"), zero, result);
}

}  // namespace torch_tpu::ops
