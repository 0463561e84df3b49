#include "ops/elementwise/incomplete_beta.h"

#include <cmath>
#include <limits>
#include <vector>

#include "ops/elementwise/parameter_slope.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Values = std::vector<Value>;

// Like the incomplete gamma's: O(sqrt(max(a, b))) steps near the mean.
constexpr int64_t kMaxIterations = 2000;

Value fill(hlo::Builder& b, double v, const Value& like) { return b.constant_splat(v, like.type()); }

// The continued fraction of I_x(a, bb): 1 / (1 + d1 / (1 + d2 / (1 + ..))),
// d(2m) = m (bb - m) x / ((a + 2m - 1)(a + 2m)), d(2m + 1) = -(a + m)(a + bb
// + m) x / ((a + 2m)(a + 2m + 1)), evaluated by modified Lentz, every
// element until it converged.
Value beta_fraction(hlo::Builder& b, const Value& a, const Value& bb, const Value& x) {
  const double eps = a.dtype() == ElementType::kF64 ? std::numeric_limits<double>::epsilon()
                                                    : std::numeric_limits<float>::epsilon();
  const double tiny = a.dtype() == ElementType::kF64 ? 1e-300 : 1e-30;
  auto guard = [tiny](hlo::Builder& c, const Value& z) {
    Value small = fill(c, tiny, z);
    return c.select(c.compare(c.abs(z), small, "LT"), small, z);
  };
  Value one = fill(b, 1, a);
  Value d0 = b.divide(one, guard(b, b.subtract(one, b.divide(b.multiply(b.add(a, bb), x), b.add(a, one)))));
  Values out = b.while_loop(
      {b.constant_splat_int(1, TensorType::scalar(ElementType::kS32)),
       b.constant_splat(0, TensorType(ElementType::kPred, a.dims())), d0, one, d0},
      [](hlo::Builder& c, const Values& v) {
        return Values{c.and_(c.compare(v[0], c.constant_splat_int(kMaxIterations, v[0].type()), "LT"),
                             c.not_(all_true(c, v[1])))};
      },
      [&](hlo::Builder& c, const Values& v) {
        Value m = c.broadcast_in_dim(c.convert(v[0], a.dtype()), a.dims(), {});
        Value m2 = c.add(m, m);
        Value h = v[2], cc = v[3], d = v[4];
        auto step = [&](const Value& coefficient) {
          d = c.divide(fill(c, 1, a), guard(c, c.add(fill(c, 1, a), c.multiply(coefficient, d))));
          cc = guard(c, c.add(fill(c, 1, a), c.divide(coefficient, cc)));
          Value del = c.multiply(d, cc);
          h = c.multiply(h, del);
          return del;
        };
        Value am2 = c.add(a, m2);
        step(c.divide(c.multiply(c.multiply(m, c.subtract(bb, m)), x),
                      c.multiply(c.subtract(am2, fill(c, 1, a)), am2)));
        Value del = step(c.negate(c.divide(c.multiply(c.multiply(c.add(a, m), c.add(c.add(a, bb), m)), x),
                                           c.multiply(am2, c.add(am2, fill(c, 1, a))))));
        Value converged = c.compare(c.abs(c.subtract(del, fill(c, 1, del))), fill(c, eps, del), "LT");
        Value done = c.or_(v[1], converged);
        auto keep = [&](const Value& next, const Value& old) { return c.select(v[1], old, next); };
        return Values{c.add(v[0], c.constant_splat_int(1, v[0].type())), done, keep(h, v[2]), keep(cc, v[3]),
                      keep(d, v[4])};
      });
  return out[2];
}

// digamma(z) - log(z), from z = 10 on by digamma's asymptotic series, free
// of the cancellation between the two.
Value digamma_minus_log(hlo::Builder& b, const Value& z) {
  Value one = fill(b, 1, z);
  Value inv = b.divide(one, z), inv2 = b.multiply(inv, inv);
  Value series = b.subtract(
      b.multiply(fill(b, -0.5, z), inv),
      b.multiply(inv2, b.add(fill(b, 1.0 / 12, z),
                             b.multiply(inv2, b.add(fill(b, -1.0 / 120, z), b.multiply(inv2, fill(b, 1.0 / 252, z)))))));
  Value direct = b.subtract(b.unary("chlo.digamma", z), b.log(z));
  return b.select(b.compare(z, fill(b, 10, z), "GE"), series, direct);
}

}  // namespace

Value lower_dirichlet_grad(hlo::Builder& b, const Value& x, const Value& alpha, const Value& total) {
  const bool f64 = x.dtype() == ElementType::kF64;
  Value zero = fill(b, 0, x), one = fill(b, 1, x), inf = fill(b, INFINITY, x);
  Value beta_in = b.subtract(total, alpha);
  Value regular = b.and_(b.and_(b.compare(x, zero, "GT"), b.compare(x, one, "LE")),
                         b.and_(b.and_(b.compare(alpha, zero, "GT"), b.compare(beta_in, zero, "GT")),
                                b.compare(total, inf, "LT")));
  Value sx = b.select(regular, x, fill(b, 0.5, x));
  Value a = b.select(regular, alpha, one), bb = b.select(regular, beta_in, one);
  Value ab = b.add(a, bb);

  // Below the mean's side I = x^a (1-x)^b / (a B) F(a, b, x); above it
  // 1 - I = x^a (1-x)^b / (b B) F(b, a, 1 - x). d log / da at fixed b:
  // log x - digamma(a) + digamma(a + b) (- 1 / a below), written as
  // log1p(t) + (digamma - log)(a + b) - (digamma - log)(a) with t =
  // (x (a + b) - a) / a, plus d log F / da by a five-point difference.
  Value lower = b.compare(sx, b.divide(b.add(a, one), b.add(ab, fill(b, 2, x))), "LT");
  Value t = b.divide(b.subtract(b.multiply(sx, ab), a), a);
  // log1p(t) = log(x (a + b) / a); far from t = 0 it is taken as that log
  // of a product, since t rounds to -1 (and log1p to -inf) for tiny x.
  Value log_ratio = b.add(b.log(sx), b.subtract(b.log(ab), b.log(a)));
  Value log_term = b.select(b.compare(b.abs(t), fill(b, 0.5, x), "LT"), b.log_plus_one(t), log_ratio);
  Value slope = b.add(log_term, b.subtract(digamma_minus_log(b, ab), digamma_minus_log(b, a)));
  slope = b.select(lower, b.subtract(slope, b.divide(one, a)), slope);

  const double relative_step = f64 ? 1e-3 : 0.05;
  const FivePointStencil stencil(b, a, b.multiply(fill(b, relative_step, x), b.maximum(one, b.sqrt(a))));
  Value low = stencil.stack(lower);
  Value points = stencil.points(), sbb = stencil.stack(bb), ssx = stencil.stack(sx);
  Value fraction = beta_fraction(b, b.select(low, points, sbb), b.select(low, sbb, points),
                                 b.select(low, ssx, b.subtract(stencil.stack(one), ssx)));
  Value d = b.add(slope, stencil.slope(b.log(fraction)));

  // (the smaller side) / pdf = x (1 - x) F / a below, x (1 - x) F / b above;
  // dx/da = -(dI/da) / pdf, and PyTorch's op divides it by 1 - x.
  Value centre = stencil.row(fraction, 0);
  Value grad = b.select(lower, b.negate(b.divide(b.multiply(b.multiply(sx, centre), d), a)),
                        b.divide(b.multiply(b.multiply(sx, centre), d), bb));

  Value result = b.select(regular, grad, fill(b, NAN, x));
  // CPU: 0 where x <= 0 or alpha is not > 0 (NaN alpha included).
  Value zero_cases = b.or_(b.compare(x, zero, "LE"), b.not_(b.compare(alpha, zero, "GT")));
  Value x_known = b.compare(x, x, "EQ");
  return b.select(b.and_(zero_cases, x_known), zero, result);
}

}  // namespace torch_tpu::ops
