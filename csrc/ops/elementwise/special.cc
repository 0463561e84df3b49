#include "ops/elementwise/special.h"

#include <cmath>
#include <functional>
#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/elementwise/airy.h"
#include "ops/elementwise/complex_math.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

constexpr double kPi = 3.14159265358979323846;

hlo::Value k(hlo::Builder& b, double v, const hlo::Value& like) { return splat_like(b, v, like); }

hlo::Value is_nan(hlo::Builder& b, const hlo::Value& x) { return b.compare(x, x, "NE"); }

hlo::Value is_integral(hlo::Builder& b, const hlo::Value& x) { return b.compare(b.floor(x), x, "EQ"); }

// The sign bit of x (set for -0.0 too).
hlo::Value sign_bit(hlo::Builder& b, const hlo::Value& x) {
  const ElementType i = x.dtype() == ElementType::kF64 ? ElementType::kS64 : ElementType::kS32;
  hlo::Value bits = b.bitcast_convert(x, hlo::TensorType(i, x.dims()));
  return b.compare(bits, splat_like(b, 0, bits), "LT");
}

// I0(|x|), times exp(-|x|) when `scaled`: the power series below a
// crossover, the asymptotic expansion above it (both converge to the
// working precision there).
hlo::Value bessel_i0(hlo::Builder& b, const hlo::Value& x, bool scaled) {
  const bool f64 = x.dtype() == ElementType::kF64;
  const double crossover = f64 ? 30.0 : 15.0;
  const int series_terms = f64 ? 50 : 26;
  const int asymptotic_terms = f64 ? 22 : 12;
  hlo::Value ax = b.abs(x);
  hlo::Value small = b.compare(ax, k(b, crossover, ax), "LT");

  // sum_k ((x/2)^2)^k / (k!)^2 in nested (Horner) form,
  // 1 + q/1 (1 + q/4 (1 + q/9 (...))), on |x| clamped into the series'
  // range. A plain running product q^k / (k!)^2 lets XLA's CPU compiler
  // reassociate it (on 1-element tensors) into x^2k * 0.25^k / (k!)^2, whose
  // factors overflow and underflow to inf * 0 = NaN.
  hlo::Value xs = b.select(small, ax, k(b, 0, ax));
  hlo::Value q = b.multiply(b.multiply(xs, xs), k(b, 0.25, xs));
  hlo::Value series = k(b, 1, xs);
  for (int i = series_terms; i >= 1; --i) {
    series = b.add(k(b, 1, xs), b.multiply(series, b.divide(q, k(b, static_cast<double>(i) * i, q))));
  }
  series = scaled ? b.multiply(series, b.exponential(b.negate(xs))) : series;

  // e^x / sqrt(2 pi x) * sum_k prod_j (2j - 1)^2 / (8 j x)
  hlo::Value xl = b.select(small, k(b, crossover, ax), ax);
  hlo::Value inv8x = b.divide(k(b, 0.125, xl), xl);
  hlo::Value sum = k(b, 1, xl);
  for (int j = asymptotic_terms; j >= 1; --j) {  // nested, as the series above
    const double odd = 2.0 * j - 1.0;
    sum = b.add(k(b, 1, xl), b.multiply(sum, b.multiply(inv8x, k(b, odd * odd / j, xl))));
  }
  // 1 / sqrt(2 pi) apart: 2 pi x overflows for x beyond max / 2 pi.
  hlo::Value asymptotic = b.multiply(b.multiply(sum, b.rsqrt(xl)), k(b, 1 / std::sqrt(2 * kPi), xl));
  // exp(x) overflows where CPU's exp(x) does, and inf gives NaN, as there
  if (!scaled) asymptotic = b.multiply(b.exponential(xl), asymptotic);
  hlo::Value r = b.select(small, series, asymptotic);
  return scaled ? b.select(b.compare(ax, k(b, INFINITY, ax), "EQ"), k(b, 0, ax), r) : r;
}

// I1(x) from XLA's exponentially scaled I1e.
hlo::Value bessel_i1(hlo::Builder& b, const hlo::Value& x, bool scaled) {
  hlo::Value e = b.unary("chlo.bessel_i1e", x);
  return scaled ? e : b.multiply(e, b.exponential(b.abs(x)));
}

// zeta(s) for an integer s >= 2, to double precision: the first 63
// terms and the Euler-Maclaurin tail.
double zeta_of_integer(int s) {
  constexpr int kTerms = 64;
  double sum = 0;
  for (int i = 1; i < kTerms; ++i) sum += std::pow(i, -s);
  const double n = kTerms;
  return sum + std::pow(n, 1 - s) / (s - 1) + 0.5 * std::pow(n, -s) + s * std::pow(n, -s - 1) / 12.0 -
         s * (s + 1.0) * (s + 2.0) * std::pow(n, -s - 3) / 720.0 +
         s * (s + 1.0) * (s + 2.0) * (s + 3.0) * (s + 4.0) * std::pow(n, -s - 5) / 30240.0;
}

// lgamma(1 + z) for |z| <= 1/2 from its Taylor series,
// -gamma z + sum_k>=2 (-1)^k zeta(k) / k z^k, in nested form: accurate
// relative to the result near lgamma's zeros at 1 and 2, where XLA's
// approximation (chlo.lgamma) leaves an absolute error of about 5e-7 in
// float32 (lgamma(1) was 4.8e-7, biasing Poisson log-likelihoods).
hlo::Value lgamma_1p_series(hlo::Builder& b, const hlo::Value& z) {
  constexpr int kOrder = 30;  // 0.5^31 / 31: below float32's resolution; 0.25^31 / 31 below float64's
  constexpr double kEulerGamma = 0.57721566490153286061;
  hlo::Value series = k(b, (kOrder % 2 ? -1.0 : 1.0) * zeta_of_integer(kOrder) / kOrder, z);
  for (int i = kOrder - 1; i >= 2; --i) {
    series = b.add(b.multiply(series, z), k(b, (i % 2 ? -1.0 : 1.0) * zeta_of_integer(i) / i, z));
  }
  series = b.add(b.multiply(series, z), k(b, -kEulerGamma, z));
  return b.multiply(series, z);
}

// ln|Gamma(x)|, +inf at the poles and at +-inf like std::lgamma.
hlo::Value lgamma(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value r = b.unary("chlo.lgamma", x);
  if (x.dtype() == ElementType::kF32) {
    // (0, 0.5): lgamma(1 + x) - log(x); [0.5, 1.5): lgamma(1 + z);
    // [1.5, 2.5): lgamma(1 + z) + log1p(z),
    // z = x - 2; [2.5, 3.5): that plus log(x - 1), z = x - 3 (the
    // differences are exact).
    auto within = [&](double lo, double hi) {
      return b.and_(b.compare(x, k(b, lo, x), "GE"), b.compare(x, k(b, hi, x), "LT"));
    };
    auto offset = [&](const hlo::Value& in, double centre) {
      return b.select(in, b.subtract(x, k(b, centre, x)), k(b, 0, x));
    };
    hlo::Value near_zero = within(0, 0.5);
    hlo::Value near_one = within(0.5, 1.5), near_two = within(1.5, 2.5), near_three = within(2.5, 3.5);
    hlo::Value z0 = offset(near_zero, 0), z1 = offset(near_one, 1), z2 = offset(near_two, 2), z3 = offset(near_three, 3);
    // (0, 0.5): lgamma(1 + x) - log(x).
    hlo::Value from_zero = b.subtract(lgamma_1p_series(b, z0), b.log(b.select(near_zero, x, k(b, 1, x))));
    hlo::Value from_two = b.add(lgamma_1p_series(b, z2), b.log_plus_one(z2));
    hlo::Value from_three = b.add(b.add(lgamma_1p_series(b, z3), b.log_plus_one(z3)),
                                  b.log(b.select(near_three, b.subtract(x, k(b, 1, x)), k(b, 1, x))));
    r = b.select(near_one, lgamma_1p_series(b, z1), b.select(near_two, from_two, b.select(near_three, from_three, r)));
    r = b.select(b.and_(near_zero, b.compare(x, k(b, 0, x), "GT")), from_zero, r);
  } else if (x.dtype() == ElementType::kF64) {
    // Near the zeros at 1 and 2, chlo.lgamma's absolute error (about 1e-16)
    // is large relative to the result (lgamma(1 + 1e-10) was 4e-6 off):
    // there the series, whose 30 terms reach double precision for
    // |z| <= 1/4.
    auto near = [&](double centre) {
      return b.and_(b.compare(x, k(b, centre - 0.25, x), "GE"), b.compare(x, k(b, centre + 0.25, x), "LT"));
    };
    hlo::Value near_one = near(1), near_two = near(2);
    hlo::Value z1 = b.select(near_one, b.subtract(x, k(b, 1, x)), k(b, 0, x));
    hlo::Value z2 = b.select(near_two, b.subtract(x, k(b, 2, x)), k(b, 0, x));
    hlo::Value from_two = b.add(lgamma_1p_series(b, z2), b.log_plus_one(z2));
    r = b.select(near_one, lgamma_1p_series(b, z1), b.select(near_two, from_two, r));
  }
  hlo::Value pole = b.and_(b.compare(x, k(b, 0, x), "LE"), is_integral(b, x));
  hlo::Value inf = b.compare(b.abs(x), k(b, INFINITY, x), "EQ");
  return b.select(b.or_(pole, inf), k(b, INFINITY, x), r);
}

// digamma, with PyTorch's values at the poles: -inf at +0, +inf at -0,
// NaN at the negative integers.
hlo::Value digamma(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value r = b.unary("chlo.digamma", x);
  hlo::Value zero = b.compare(x, k(b, 0, x), "EQ");
  hlo::Value at_zero = b.select(sign_bit(b, x), k(b, INFINITY, x), k(b, -INFINITY, x));
  hlo::Value negative_integer = b.and_(b.compare(x, k(b, 0, x), "LT"), is_integral(b, x));
  r = b.select(negative_integer, k(b, NAN, x), r);
  return b.select(zero, at_zero, r);
}

// The first derivative of digamma: reflection below 1/2, recurrence up by
// six, then the asymptotic series (as PyTorch's CPU kernel computes it).
hlo::Value trigamma(hlo::Builder& b, const hlo::Value& input) {
  hlo::Value reflect = b.compare(input, k(b, 0.5, input), "LT");
  hlo::Value s = b.sine(b.multiply(input, k(b, kPi, input)));
  hlo::Value reflection = b.divide(k(b, kPi * kPi, s), b.multiply(s, s));
  hlo::Value x = b.select(reflect, b.subtract(k(b, 1, input), input), input);
  hlo::Value sum = k(b, 0, x);
  for (int i = 0; i < 6; ++i) {
    sum = b.add(sum, b.divide(k(b, 1, x), b.multiply(x, x)));
    x = b.add(x, k(b, 1, x));
  }
  hlo::Value ixx = b.divide(k(b, 1, x), b.multiply(x, x));
  hlo::Value poly = b.subtract(k(b, 1.0 / 30, x), b.multiply(ixx, k(b, 1.0 / 42, x)));
  poly = b.subtract(k(b, 1.0 / 6, x), b.multiply(ixx, poly));
  poly = b.add(b.add(k(b, 1, x), b.divide(k(b, 1, x), b.multiply(x, k(b, 2, x)))), b.multiply(ixx, poly));
  sum = b.add(sum, b.divide(poly, x));
  return b.select(reflect, b.subtract(reflection, sum), sum);
}

// The largest even order whose near-zero pair is summed in factored form
// (its sum of powers is unrolled: 3 ops per order).
constexpr int64_t kMaxPairedPolygammaOrder = 64;

// polygamma(n, x) for n >= 2 and x off the poles. XLA's chlo.polygamma is
// only right for x > 0, so negative x is first moved up by the recurrence
// psi_n(x) = psi_n(x + 1) + (-1)^(n + 1) n! / x^(n + 1), one step per loop
// iteration, to x >= 6 (not just > 0: the terms on both sides of 0 then
// cancel within the sum, as in the CPU kernel's zeta, rather than against a
// large psi_n near 0). Below -2^24 (f32) every float is an integer, i.e. a
// pole, so the loop ends.
//
// For even n the two terms nearest 0, 1 / a^(n + 1) and 1 / b^(n + 1) with
// a in (-1, 0) and b = a + 1, have opposite signs and cancel to a small
// part of either near a = -1/2 (polygamma(4, -2.49998) lost 4 digits in
// float32); they are summed in the factored form
//   (a + b) (|a|^n + |a|^(n-1) b + ... + b^n) / (a b)^(n + 1)
// whose terms are all positive, from the exact a = x - ceil(x).
hlo::Value polygamma_shifted(hlo::Builder& b, int64_t n, const hlo::Value& x) {
  const double limit = x.dtype() == ElementType::kF64 ? 9007199254740992.0 : 16777216.0;
  const bool pair_near_zero = n % 2 == 0 && n <= kMaxPairedPolygammaOrder;
  auto needs_shift = [limit](hlo::Builder& c, const hlo::Value& v, const hlo::Value& negative) {
    return c.and_(negative, c.and_(c.compare(v, k(c, 6, v), "LT"), c.compare(v, k(c, -limit, v), "GT")));
  };
  hlo::Value negative = b.compare(x, k(b, 0, x), "LT");
  std::vector<hlo::Value> out = b.while_loop(
      {x, k(b, 0, x), negative},
      [needs_shift](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        hlo::Value m = needs_shift(c, v[0], v[2]);
        std::vector<int64_t> all;
        for (int64_t d = 0; d < m.rank(); ++d) all.push_back(d);
        return c.reduce({m}, {c.constant_splat_int(0, hlo::TensorType::scalar(ElementType::kPred))}, all,
                        [](hlo::Builder& r, const std::vector<hlo::Value>& a) {
                          return std::vector<hlo::Value>{r.or_(a[0], a[1])};
                        });
      },
      [n, needs_shift, pair_near_zero](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        hlo::Value m = needs_shift(c, v[0], v[2]);
        hlo::Value add_term = m;
        if (pair_near_zero) {
          const hlo::Value near_zero =
              c.and_(c.compare(v[0], k(c, -1, v[0]), "GT"), c.compare(v[0], k(c, 1, v[0]), "LT"));
          add_term = c.and_(m, c.not_(near_zero));
        }
        hlo::Value term = c.power(v[0], k(c, -static_cast<double>(n + 1), v[0]));
        return std::vector<hlo::Value>{c.select(m, c.add(v[0], k(c, 1, v[0])), v[0]),
                                       c.add(v[1], c.select(add_term, term, k(c, 0, term))), v[2]};
      });
  hlo::Value sum = out[1];
  if (pair_near_zero) {
    const hlo::Value lo = b.subtract(x, b.ceil(x)), hi = b.add(lo, k(b, 1, lo));
    const hlo::Value lo_abs = b.negate(lo);
    hlo::Value powers = k(b, 1, x), q = k(b, 1, x);
    for (int64_t i = 1; i <= n; ++i) {
      powers = b.multiply(powers, lo_abs);
      q = b.add(powers, b.multiply(hi, q));
    }
    const hlo::Value pair = b.divide(b.multiply(b.add(lo, hi), q),
                                     b.power(b.multiply(lo, hi), k(b, static_cast<double>(n + 1), x)));
    sum = b.add(sum, b.select(negative, pair, k(b, 0, pair)));
  }
  hlo::Value r = b.binary("chlo.polygamma", k(b, static_cast<double>(n), x), out[0]);
  const double factorial = std::exp(std::lgamma(static_cast<double>(n) + 1));
  return b.add(r, b.multiply(sum, k(b, n % 2 ? factorial : -factorial, r)));
}

// exp(x^2) erfc(x). Below 2 the product itself is accurate (and overflows
// for x < -9.4 in f32, where the CPU kernel overflows too); from 2 up erfc
// underflows, so the continued fraction
// erfcx(x) = 1/sqrt(pi) / (x + (1/2) / (x + (2/2) / (x + (3/2) / ...)))
// is evaluated bottom-up (it has converged to the working precision there).
hlo::Value erfcx(hlo::Builder& b, const hlo::Value& x) {
  const int levels = x.dtype() == ElementType::kF64 ? 80 : 24;
  hlo::Value large = b.compare(x, k(b, 2, x), "GE");
  hlo::Value xs = b.select(large, k(b, 0, x), x);
  hlo::Value direct = b.multiply(b.exponential(b.multiply(xs, xs)), b.unary("chlo.erfc", xs));
  hlo::Value xl = b.select(large, x, k(b, 2, x));
  hlo::Value t = xl;
  for (int i = levels; i >= 1; --i) t = b.add(xl, b.divide(k(b, 0.5 * i, xl), t));
  hlo::Value fraction = b.divide(k(b, 1 / std::sqrt(kPi), t), t);
  return b.select(large, fraction, direct);
}

// log of the standard normal CDF, as the CPU kernel computes it: through
// erfcx below -1 (where the CDF underflows), log1p above.
hlo::Value log_ndtr(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value t = b.multiply(x, k(b, 1 / std::sqrt(2.0), x));
  hlo::Value tail = b.subtract(b.log(b.multiply(erfcx(b, b.negate(t)), k(b, 0.5, t))), b.multiply(t, t));
  hlo::Value body = b.log_plus_one(b.multiply(b.unary("chlo.erfc", t), k(b, -0.5, t)));
  return b.select(b.compare(x, k(b, -1, x), "LT"), tail, body);
}

// The inverse of the standard normal CDF, on the lower half (the upper
// half by symmetry, 1 - p being exact there). The start is sqrt(2)
// erfinv(2p - 1), except in the tail, where 2p - 1 rounds to -1 (p = 1e-8
// in f32 gave -inf): there the asymptote of ndtr, ln p ~ -x^2 / 2 - ln|x| -
// ln(2 pi) / 2, gives x^2 ~ L - ln L - ln(2 pi) with L = -2 ln p. Below p = 0.05
// three Newton steps on log ndtr(x) = ln p restore the relative accuracy
// that 2p - 1 loses; their slope, ndtr'(x) / ndtr(x) = sqrt(2 / pi) /
// erfcx(-x / sqrt 2), does not underflow however deep the tail. Nearer
// 0.5 the erfinv start is accurate and a step would not be: the residual's
// absolute error (an ulp of ln 0.5) swamps an x near 0.
hlo::Value ndtri(hlo::Builder& b, const hlo::Value& p) {
  hlo::Value upper = b.compare(p, k(b, 0.5, p), "GT");
  hlo::Value q = b.select(upper, b.subtract(k(b, 1, p), p), p);
  hlo::Value central =
      b.multiply(b.unary("chlo.erf_inv", b.subtract(b.add(q, q), k(b, 1, q))), k(b, std::sqrt(2.0), q));
  hlo::Value l = b.multiply(b.log(q), k(b, -2, q));
  hlo::Value tail = b.negate(b.sqrt(b.subtract(b.subtract(l, b.log(l)), k(b, std::log(2 * kPi), q))));
  hlo::Value in_tail = b.and_(b.compare(q, k(b, 1e-3, q), "LT"), b.compare(q, k(b, 0, q), "GT"));
  hlo::Value x = b.select(in_tail, tail, central);
  hlo::Value refine = b.and_(b.and_(b.compare(q, k(b, 0, q), "GT"), b.compare(q, k(b, 0.05, q), "LT")),
                             b.is_finite(x));
  hlo::Value log_q = b.log(q);
  for (int i = 0; i < 3; ++i) {
    hlo::Value slope =
        b.divide(k(b, std::sqrt(2 / kPi), x), erfcx(b, b.multiply(x, k(b, -1 / std::sqrt(2.0), x))));
    hlo::Value step = b.divide(b.subtract(log_ndtr(b, x), log_q), slope);
    x = b.select(b.and_(refine, b.is_finite(step)), b.subtract(x, step), x);
  }
  hlo::Value r = b.select(upper, b.negate(x), x);
  hlo::Value outside = b.or_(b.compare(p, k(b, 0, p), "LT"), b.compare(p, k(b, 1, p), "GT"));
  return b.select(outside, k(b, NAN, p), r);
}

// sin(x) / x, by its Taylor polynomial near 0 and 0 at +-inf (CPU's kernel).
hlo::Value spherical_bessel_j0(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value xx = b.multiply(x, x);
  const double coefficients[] = {1.0 / 6227020800.0, -1.0 / 39916800.0, 1.0 / 362880.0, -1.0 / 5040.0,
                                 1.0 / 120.0,         -1.0 / 6.0};
  hlo::Value poly = k(b, 0, x);
  for (double c : coefficients) poly = b.multiply(xx, b.add(k(b, c, x), poly));
  poly = b.add(k(b, 1, x), poly);
  hlo::Value small = b.compare(b.abs(x), k(b, 0.5, x), "LT");
  hlo::Value r = b.select(small, poly, b.divide(b.sine(x), x));
  return b.select(b.compare(b.abs(x), k(b, INFINITY, x), "EQ"), k(b, 0, x), r);
}

// The modified Bessel function K_nu (nu = 0 or 1), times exp(x) when
// `scaled`. Below 10 from its integral exp(x) K_nu(x) =
// int_0^inf exp(-x (cosh t - 1)) cosh(nu t) dt by the trapezoidal rule
// (exponentially accurate for this doubly exponentially decaying analytic
// integrand: step 1/4 resolves its width 1/sqrt(x) for x < 10, and 80 nodes
// reach the tail for x >= 1e-6); from 10 up by the asymptotic expansion
// sqrt(pi / 2x) sum_k prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (8 j x); below 1e-6
// by the leading terms -log(x/2) - gamma and 1/x.
hlo::Value modified_bessel_k(hlo::Builder& b, const hlo::Value& x, int nu, bool scaled) {
  const double h = 0.25, euler_gamma = 0.57721566490153286;
  const int nodes = 80, asymptotic_terms = 14;
  hlo::Value mid = b.and_(b.compare(x, k(b, 1e-6, x), "GE"), b.compare(x, k(b, 10, x), "LT"));
  hlo::Value xm = b.select(mid, x, k(b, 1, x));
  hlo::Value integral = k(b, 0, x);
  for (int i = nodes - 1; i >= 0; --i) {
    const double t = i * h, sinh_half = std::sinh(t / 2);
    const double weight = (i == 0 ? h / 2 : h) * (nu == 0 ? 1.0 : std::cosh(t));
    hlo::Value term = b.exponential(b.multiply(xm, k(b, -2 * sinh_half * sinh_half, xm)));
    integral = b.add(integral, b.multiply(term, k(b, weight, xm)));
  }
  hlo::Value xl = b.select(b.compare(x, k(b, 10, x), "GE"), x, k(b, 10, x));
  hlo::Value inv8x = b.divide(k(b, 0.125, xl), xl);
  hlo::Value series = k(b, 1, xl);
  const double mu = 4.0 * nu * nu;
  for (int j = asymptotic_terms; j >= 1; --j) {
    const double odd = 2.0 * j - 1.0;
    series = b.add(k(b, 1, xl), b.multiply(series, b.multiply(inv8x, k(b, (mu - odd * odd) / j, xl))));
  }
  // sqrt(pi / 2) apart: (pi / 2) / x is subnormal, so flushed to 0, for x near the largest float.
  hlo::Value asymptotic = b.multiply(b.multiply(series, b.rsqrt(xl)), k(b, std::sqrt(kPi / 2), xl));
  hlo::Value r = b.select(mid, integral, asymptotic);
  // Unscaled: exp(-x) times the above (0 once it underflows, as on CPU).
  if (!scaled) r = b.multiply(r, b.exponential(b.negate(x)));
  hlo::Value xs = b.select(b.compare(x, k(b, 1e-6, x), "LT"), x, k(b, 1, x));
  // log(x) - log(2): x / 2 of the smallest normal float is subnormal (flushed to 0).
  hlo::Value tiny = nu == 0 ? b.negate(b.add(b.log(xs), k(b, euler_gamma - std::log(2.0), xs)))
                            : b.divide(k(b, 1, xs), xs);
  if (scaled) tiny = b.multiply(tiny, b.exponential(xs));
  r = b.select(b.compare(x, k(b, 1e-6, x), "LT"), tiny, r);
  r = b.select(b.compare(x, k(b, 0, x), "EQ"), k(b, INFINITY, x), r);
  r = b.select(b.compare(x, k(b, INFINITY, x), "EQ"), k(b, 0, x), r);
  r = b.select(is_nan(b, x), x, r);
  return b.select(b.compare(x, k(b, 0, x), "LT"), k(b, NAN, x), r);
}

// Bessel's integral J_m(x) = 1/(2 pi) int_0^{2 pi} cos(m t - x sin t) dt by
// the trapezoidal rule on `points` nodes is exact up to terms of order
// J_{points - m}(x). Each J_m, and any fixed linear combination of them, is
// then a weighted sum over the nodes of cos(x sin t) and sin(x sin t)
// (cos(m t - x sin t) = cos(m t) cos(x sin t) + sin(m t) sin(x sin t); the
// integrand's symmetry halves the nodes): the weights come from the host.
class BesselQuadrature {
 public:
  static constexpr int kPoints = 256;

  BesselQuadrature(hlo::Builder& b, const hlo::Value& x) : b_(b), x_(x) {
    for (int i = 0; i <= kPoints / 2; ++i) {
      const double t = 2 * kPi * i / kPoints;
      hlo::Value arg = b.multiply(x, k(b, std::sin(t), x));
      cos_.push_back(b.cosine(arg));
      sin_.push_back(b.sine(arg));
    }
  }

  // sum_m coefficient(m) J_m(x) for m in [0, max_order].
  hlo::Value combination(const std::function<double(int)>& coefficient, int max_order) const {
    hlo::Value sum = k(b_, 0, x_);
    for (int i = 0; i <= kPoints / 2; ++i) {
      const double t = 2 * kPi * i / kPoints;
      const double weight = (i == 0 || i == kPoints / 2 ? 1.0 : 2.0) / kPoints;
      double a = 0, c = 0;
      // J_m of even m has no sin part and of odd m no cos part (the
      // integrand's symmetry about pi / 2): their weights sum to zero only
      // in exact arithmetic, and left in they gave J1(0) = 1.7e-8.
      for (int m = 0; m <= max_order; ++m) {
        if (m % 2 == 0) {
          a += coefficient(m) * std::cos(m * t);
        } else {
          c += coefficient(m) * std::sin(m * t);
        }
      }
      sum = b_.add(sum, b_.add(b_.multiply(cos_[i], k(b_, weight * a, x_)), b_.multiply(sin_[i], k(b_, weight * c, x_))));
    }
    return sum;
  }

 private:
  hlo::Builder& b_;
  hlo::Value x_;
  std::vector<hlo::Value> cos_, sin_;
};

// Hankel's asymptotic expansion of J_n and Y_n (n = 0 or 1) for large x:
// sqrt(2 / (pi x)) (P cos chi - Q sin chi) and (P sin chi + Q cos chi), chi
// = x - (2n + 1) pi / 4, with cos / sin of chi expanded so that no rounded
// shift of a large x enters them.
struct HankelParts {
  hlo::Value scale, p, q, cos_chi, sin_chi;
};

HankelParts hankel(hlo::Builder& b, const hlo::Value& x, int n) {
  const int terms = 16;
  // P = sum (-1)^k a_2k / x^2k, Q = sum (-1)^k a_2k+1 / x^2k+1, a_k = prod_{j<=k} (4n^2 - (2j-1)^2) / (8 j).
  hlo::Value inv8x = b.divide(k(b, 0.125, x), x);
  hlo::Value term = k(b, 1, x), p = k(b, 1, x), q = k(b, 0, x);
  const double mu = 4.0 * n * n;
  for (int j = 1; j <= terms; ++j) {
    const double odd = 2.0 * j - 1.0;
    term = b.multiply(term, b.multiply(inv8x, k(b, (mu - odd * odd) / j, x)));
    const double sign = ((j / 2) % 2 == 0) ? 1.0 : -1.0;
    if (j % 2 == 0) {
      p = b.add(p, b.multiply(term, k(b, sign, x)));
    } else {
      q = b.add(q, b.multiply(term, k(b, sign, x)));
    }
  }
  hlo::Value c = b.cosine(x), s = b.sine(x);
  const double r = 1 / std::sqrt(2.0);
  hlo::Value cos_chi = b.multiply(n == 0 ? b.add(c, s) : b.subtract(s, c), k(b, r, x));
  hlo::Value sin_chi = b.multiply(n == 0 ? b.subtract(s, c) : b.negate(b.add(s, c)), k(b, r, x));
  // sqrt(2 / pi) apart: (2 / pi) / x is subnormal (flushed to 0) near the largest float.
  return {b.multiply(b.rsqrt(x), k(b, std::sqrt(2 / kPi), x)), p, q, cos_chi, sin_chi};
}

// Below this the quadrature, above it Hankel's expansion (its smallest term
// is below 1e-17 there).
constexpr double kBesselSwitch = 25;

// The Bessel function J_n (n = 0 or 1): Bessel's integral up to |x| = 25,
// Hankel's expansion above.
hlo::Value bessel_j(hlo::Builder& b, const hlo::Value& x, int n) {
  hlo::Value ax = b.abs(x);
  hlo::Value small = b.compare(ax, k(b, kBesselSwitch, ax), "LE");
  hlo::Value xs = b.select(small, ax, k(b, 0, ax));
  hlo::Value integral = BesselQuadrature(b, xs).combination([n](int m) { return m == n ? 1.0 : 0.0; }, n);
  const HankelParts h = hankel(b, b.select(small, k(b, kBesselSwitch, ax), ax), n);
  hlo::Value asymptotic = b.multiply(h.scale, b.subtract(b.multiply(h.p, h.cos_chi), b.multiply(h.q, h.sin_chi)));
  hlo::Value result = b.select(small, integral, asymptotic);
  // (+-inf gives NaN through cos(inf), as CPU's kernel does.)
  result = b.select(is_nan(b, x), x, result);
  // J1 is odd.
  return n == 1 ? b.select(b.compare(x, k(b, 0, x), "LT"), b.negate(result), result) : result;
}

// The Bessel function of the second kind Y_n (n = 0 or 1). Up to x = 25
// from Neumann's series Y0 = (2/pi) (log(x/2) + gamma) J0 - (4/pi) sum_k
// (-1)^k J_2k / k and its derivative Y1 = -Y0' = (2/pi) ((log(x/2) + gamma)
// J1 - J0 / x) + (2/pi) sum_k (-1)^k (J_2k-1 - J_2k+1) / k, every J_m from
// the quadrature (J_m is below 1e-17 past m = 2k = 90 for x <= 25); above
// 25 Hankel's expansion. CPU's special cases: -inf at 0, NaN below 0 and at
// inf.
hlo::Value bessel_y(hlo::Builder& b, const hlo::Value& x, int n) {
  constexpr double kEulerGamma = 0.57721566490153286;
  constexpr int kTerms = 45;
  hlo::Value small = b.compare(x, k(b, kBesselSwitch, x), "LE");
  hlo::Value xs = b.select(b.and_(small, b.compare(x, k(b, 0, x), "GT")), x, k(b, 1, x));
  const BesselQuadrature quadrature(b, xs);
  // log(x / 2) + gamma as log(x) + (gamma - log 2): x / 2 of the smallest normal float is flushed to 0.
  hlo::Value log_term = b.add(b.log(xs), k(b, kEulerGamma - std::log(2.0), xs));
  hlo::Value series;
  if (n == 0) {
    hlo::Value neumann = quadrature.combination(
        [](int m) { return m > 0 && m % 2 == 0 ? ((m / 2) % 2 == 0 ? 1.0 : -1.0) / (m / 2) : 0.0; }, 2 * kTerms);
    hlo::Value j0 = quadrature.combination([](int m) { return m == 0 ? 1.0 : 0.0; }, 0);
    series = b.subtract(b.multiply(k(b, 2 / kPi, xs), b.multiply(log_term, j0)), b.multiply(k(b, 4 / kPi, xs), neumann));
  } else {
    // sum_k (-1)^k (J_2k-1 - J_2k+1) / k: J_m (m odd) gets (-1)^k / k from
    // k = (m + 1) / 2 and -(-1)^k / k from k = (m - 1) / 2.
    hlo::Value neumann = quadrature.combination(
        [](int m) {
          if (m % 2 == 0) return 0.0;
          double c = 0;
          const int up = (m + 1) / 2, down = (m - 1) / 2;
          c += (up % 2 == 0 ? 1.0 : -1.0) / up;
          if (down >= 1) c -= (down % 2 == 0 ? 1.0 : -1.0) / down;
          return c;
        },
        2 * kTerms + 1);
    hlo::Value j0 = quadrature.combination([](int m) { return m == 0 ? 1.0 : 0.0; }, 0);
    hlo::Value j1 = quadrature.combination([](int m) { return m == 1 ? 1.0 : 0.0; }, 1);
    series = b.multiply(k(b, 2 / kPi, xs),
                        b.add(b.subtract(b.multiply(log_term, j1), b.divide(j0, xs)), neumann));
  }
  const HankelParts h = hankel(b, b.select(small, k(b, kBesselSwitch, x), x), n);
  hlo::Value asymptotic = b.multiply(h.scale, b.add(b.multiply(h.p, h.sin_chi), b.multiply(h.q, h.cos_chi)));
  hlo::Value result = b.select(small, series, asymptotic);
  result = b.select(b.compare(x, k(b, 0, x), "EQ"), k(b, -INFINITY, x), result);
  result = b.select(b.compare(x, k(b, INFINITY, x), "EQ"), k(b, NAN, x), result);
  result = b.select(b.compare(x, k(b, 0, x), "LT"), k(b, NAN, x), result);
  return b.select(is_nan(b, x), x, result);
}

// An inverse trigonometric / hyperbolic function; complex arguments go
// through their symmetries so a signed zero picks its side of a branch cut.
hlo::Value inverse(hlo::Builder& b, const char* name, const hlo::Value& x, bool odd) {
  if (!is_complex(x.dtype())) return b.unary(name, x);
  return by_symmetry(b, x, odd, [&](const hlo::Value& z) { return b.unary(name, z); });
}

// XLA's complex inverse functions turn some NaN parts into finite ones
// (atanh(NaN + 0i) = NaN + pi/2 i). The guards below put back C99 Annex G's
// values, which CPU gives: a NaN part propagates to both parts except where
// the annex names a limit. NanParts holds what they share: z = x + yi and
// the unguarded result re + im i.
struct NanParts {
  hlo::Value x, y, re, im, x_nan, y_nan, nan;
  NanParts(hlo::Builder& b, const hlo::Value& z, const hlo::Value& r)
      : x(b.real(z)), y(b.imag(z)), re(b.real(r)), im(b.imag(r)) {
    x_nan = b.compare(x, x, "NE");
    y_nan = b.compare(y, y, "NE");
    nan = k(b, NAN, x);
  }
};

hlo::Value complex_atanh(hlo::Builder& b, const hlo::Value& z) {
  NanParts p(b, z, inverse(b, "chlo.atanh", z, true));
  hlo::Value zero = k(b, 0, p.x);
  hlo::Value y_inf = b.compare(b.abs(p.y), k(b, INFINITY, p.y), "EQ");
  hlo::Value x_inf = b.compare(b.abs(p.x), k(b, INFINITY, p.x), "EQ");
  // atanh(NaN + yi) = NaN + NaN i unless y is infinite (then +-0 +- pi/2 i);
  // atanh(x + NaN i) = +-0 + NaN i for x = +-0 or +-inf, else NaN + NaN i.
  hlo::Value im = b.select(b.or_(b.and_(p.x_nan, b.not_(y_inf)), p.y_nan), p.nan, p.im);
  hlo::Value zero_like_x = b.select(b.compare(p.x, zero, "LT"), k(b, -0.0, p.x), zero);
  hlo::Value limit = b.select(b.compare(p.x, zero, "EQ"), p.x, b.select(x_inf, zero_like_x, p.nan));
  return b.complex(b.select(p.y_nan, limit, p.re), im);
}

hlo::Value complex_asinh(hlo::Builder& b, const hlo::Value& z) {
  NanParts p(b, z, inverse(b, "chlo.asinh", z, true));
  hlo::Value y_zero = b.compare(p.y, k(b, 0, p.y), "EQ");
  hlo::Value y_finite_nonzero = b.and_(b.is_finite(p.y), b.not_(y_zero));
  // asinh(NaN + 0i) = NaN + 0i (the zero's sign kept); asinh(NaN + yi) =
  // NaN + NaN i for finite nonzero y; asinh(NaN +- inf i) = +-inf + NaN i.
  hlo::Value im = b.select(b.and_(p.x_nan, y_zero), p.y, b.select(b.or_(p.x_nan, p.y_nan), p.nan, p.im));
  return b.complex(b.select(b.and_(p.x_nan, y_finite_nonzero), p.nan, p.re), im);
}

// acos and acosh of x + NaN i: pi/2 (as the real part of acos, the
// imaginary part of acosh) for x = +-0, NaN in both parts for other finite x
// (XLA's gave NaN for the first and a finite part for huge x).
hlo::Value complex_acos_like(hlo::Builder& b, const hlo::Value& z, const char* name, bool hyperbolic) {
  NanParts p(b, z, inverse(b, name, z, false));
  hlo::Value finite_x = b.and_(p.y_nan, b.is_finite(p.x));
  hlo::Value x_zero = b.compare(p.x, k(b, 0, p.x), "EQ");
  hlo::Value right_angle = b.select(b.and_(p.y_nan, x_zero), k(b, M_PI / 2, p.x), p.nan);
  if (hyperbolic) return b.complex(b.select(finite_x, p.nan, p.re), b.select(finite_x, right_angle, p.im));
  return b.complex(b.select(finite_x, right_angle, p.re), b.select(finite_x, p.nan, p.im));
}

// f(z) = -i g(i z): atan from atanh and asin from asinh, so that their
// NaN parts follow the annex too (it defines them so).
hlo::Value rotated(hlo::Builder& b, const hlo::Value& z, hlo::Value (*g)(hlo::Builder&, const hlo::Value&)) {
  hlo::Value iz = b.complex(b.negate(b.imag(z)), b.real(z));
  hlo::Value w = g(b, iz);
  return b.complex(b.imag(w), b.negate(b.real(w)));
}

hlo::Value special(hlo::Builder& b, SpecialOp op, const hlo::Value& x) {
  switch (op) {
    case SpecialOp::kAsin: return is_complex(x.dtype()) ? rotated(b, x, complex_asinh) : inverse(b, "chlo.asin", x, true);
    case SpecialOp::kAcos:
      return is_complex(x.dtype()) ? complex_acos_like(b, x, "chlo.acos", false) : inverse(b, "chlo.acos", x, false);
    case SpecialOp::kAtan: return is_complex(x.dtype()) ? rotated(b, x, complex_atanh) : inverse(b, "chlo.atan", x, true);
    case SpecialOp::kSinh: return is_complex(x.dtype()) ? complex_sinh(b, x) : b.unary("chlo.sinh", x);
    case SpecialOp::kCosh: return is_complex(x.dtype()) ? complex_cosh(b, x) : b.unary("chlo.cosh", x);
    case SpecialOp::kAsinh: return is_complex(x.dtype()) ? complex_asinh(b, x) : inverse(b, "chlo.asinh", x, true);
    case SpecialOp::kAcosh:
      return is_complex(x.dtype()) ? complex_acos_like(b, x, "chlo.acosh", true) : inverse(b, "chlo.acosh", x, false);
    case SpecialOp::kAtanh: return is_complex(x.dtype()) ? complex_atanh(b, x) : inverse(b, "chlo.atanh", x, true);
    case SpecialOp::kExp2: return is_complex(x.dtype()) ? complex_exp2(b, x) : b.power(k(b, 2, x), x);
    case SpecialOp::kErfc: return b.unary("chlo.erfc", x);
    case SpecialOp::kLgamma: return lgamma(b, x);
    case SpecialOp::kDigamma: return digamma(b, x);
    case SpecialOp::kI0: return bessel_i0(b, x, false);
    case SpecialOp::kI0e: return bessel_i0(b, x, true);
    case SpecialOp::kI1: return bessel_i1(b, x, false);
    case SpecialOp::kI1e: return bessel_i1(b, x, true);
    case SpecialOp::kModifiedBesselI0: return bessel_i0(b, x, false);
    case SpecialOp::kModifiedBesselI1: return bessel_i1(b, x, false);
    case SpecialOp::kErfcx: return erfcx(b, x);
    case SpecialOp::kNdtri: return ndtri(b, x);
    case SpecialOp::kLogNdtr: return log_ndtr(b, x);
    case SpecialOp::kSphericalBesselJ0: return spherical_bessel_j0(b, x);
    case SpecialOp::kModifiedBesselK0: return modified_bessel_k(b, x, 0, false);
    case SpecialOp::kModifiedBesselK1: return modified_bessel_k(b, x, 1, false);
    case SpecialOp::kScaledModifiedBesselK0: return modified_bessel_k(b, x, 0, true);
    case SpecialOp::kScaledModifiedBesselK1: return modified_bessel_k(b, x, 1, true);
    case SpecialOp::kBesselJ0: return bessel_j(b, x, 0);
    case SpecialOp::kBesselJ1: return bessel_j(b, x, 1);
    case SpecialOp::kBesselY0: return bessel_y(b, x, 0);
    case SpecialOp::kBesselY1: return bessel_y(b, x, 1);
    case SpecialOp::kAiryAi: return lower_airy_ai(b, x);
    case SpecialOp::kSinc: {
      if (is_complex(x.dtype())) {
        const hlo::Value re = b.real(x), im = b.imag(x), pi = k(b, kPi, re);
        const hlo::Value p = b.complex(b.multiply(re, pi), b.multiply(im, pi));
        return b.select(b.compare(x, k(b, 0, x), "EQ"), k(b, 1, x), b.divide(complex_sin(b, p), p));
      }
      hlo::Value p = b.multiply(x, k(b, kPi, x));
      return b.select(b.compare(x, k(b, 0, x), "EQ"), k(b, 1, x), b.divide(b.sine(p), p));
    }
    case SpecialOp::kEntr: {
      hlo::Value r = b.select(b.compare(x, k(b, 0, x), "EQ"), k(b, 0, x), k(b, -INFINITY, x));
      r = b.select(b.compare(x, k(b, 0, x), "GT"), b.negate(b.multiply(x, b.log(x))), r);
      return b.select(is_nan(b, x), x, r);
    }
  }
  throw hlo::HloError("lower_special: unknown op");
}

}  // namespace

hlo::Value lower_special(hlo::Builder& b, SpecialOp op, const hlo::Value& input, ElementType out) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(out));
  return convert_to(b, special(b, op, x), out);
}

std::pair<hlo::Value, hlo::Value> lower_frexp(hlo::Builder& b, const hlo::Value& input) {
  // Integer operations on the bits only: XLA's CPU code treats subnormal
  // inputs of float arithmetic as zero. f16 / bf16 go through f32 (their
  // values and mantissas are exact there and back).
  const bool f64 = input.dtype() == ElementType::kF64;
  const hlo::Value x = f64 ? input : convert_to(b, input, ElementType::kF32);
  const ElementType int_type = f64 ? ElementType::kS64 : ElementType::kS32;
  const int width = f64 ? 64 : 32, fraction_bits = f64 ? 52 : 23;
  const int64_t exponent_max = f64 ? 0x7ff : 0xff, half_exponent = f64 ? 1022 : 126;
  const int64_t fraction_mask = (int64_t{1} << fraction_bits) - 1;
  const hlo::TensorType ints(int_type, x.dims());
  auto c = [&](int64_t v) { return b.constant_splat_int(v, ints); };
  hlo::Value bits = b.bitcast_convert(x, ints);
  hlo::Value sign = b.and_(bits, c(std::numeric_limits<int64_t>::min() >> (64 - width)));
  hlo::Value biased = b.and_(b.shift_right_logical(bits, c(fraction_bits)), c(exponent_max));
  hlo::Value fraction = b.and_(bits, c(fraction_mask));
  // Normal: x = 1.f * 2^(E - bias) = 0.1f * 2^(E - bias + 1).
  hlo::Value e = b.subtract(biased, c(half_exponent));
  // Subnormal: the top set bit p of f makes x = 1.xxx * 2^(p - fraction_bits - bias + 1).
  hlo::Value top = b.subtract(c(width - 1), b.count_leading_zeros(fraction));
  hlo::Value sub_e = b.subtract(top, c(fraction_bits + half_exponent - 1));
  hlo::Value sub_fraction = b.and_(b.shift_left(fraction, b.subtract(c(fraction_bits), top)), c(fraction_mask));
  hlo::Value subnormal = b.compare(biased, c(0), "EQ");
  e = b.select(subnormal, sub_e, e);
  fraction = b.select(subnormal, sub_fraction, fraction);
  hlo::Value m_bits = b.or_(b.or_(sign, c(half_exponent << fraction_bits)), fraction);
  // Zeros, infinities and NaN come back as they are, with exponent 0.
  hlo::Value zero = b.compare(b.and_(bits, c(~(std::numeric_limits<int64_t>::min() >> (64 - width)))), c(0), "EQ");
  hlo::Value plain = b.or_(zero, b.compare(biased, c(exponent_max), "EQ"));
  hlo::Value m = b.bitcast_convert(b.select(plain, bits, m_bits), x.type());
  e = b.select(plain, c(0), e);
  return {convert_to(b, m, input.dtype()), convert_to(b, e, ElementType::kS32)};
}

hlo::Value lower_polygamma(hlo::Builder& b, int64_t n, const hlo::Value& input, ElementType out) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(out));
  hlo::Value r;
  if (n == 0) {
    r = digamma(b, x);
  } else if (n == 1) {
    r = trigamma(b, x);
  } else {
    // at the poles (and -inf) n! zeta(n + 1, x) is infinite, with the sign of (-1)^(n + 1)
    hlo::Value pole = b.and_(b.compare(x, k(b, 0, x), "LE"), is_integral(b, x));
    r = polygamma_shifted(b, n, b.select(pole, k(b, 1, x), x));
    r = b.select(pole, k(b, n % 2 ? INFINITY : -INFINITY, x), r);
  }
  return convert_to(b, r, out);
}

hlo::Value lower_logit(hlo::Builder& b, const hlo::Value& input, const std::optional<hlo::Value>& eps,
                       ElementType out) {
  hlo::Value x = convert_to(b, input, elementwise_compute_type(out));
  if (eps) {
    // The bounds in the tensor's own dtype, as the CPU kernel holds them.
    hlo::Value lo = convert_to(b, convert_to(b, *eps, out), x.dtype());
    hlo::Value hi = convert_to(b, convert_to(b, b.subtract(k(b, 1, lo), lo), out), x.dtype());
    lo = broadcast_to(b, lo, x.dims());
    hi = broadcast_to(b, hi, x.dims());
    x = b.select(b.compare(x, lo, "LT"), lo, b.select(b.compare(x, hi, "GT"), hi, x));
  }
  return convert_to(b, b.log(b.divide(x, b.subtract(k(b, 1, x), x))), out);
}

hlo::Value lower_logit_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                const std::optional<hlo::Value>& eps, ElementType out) {
  auto dims = broadcast_shapes(grad.dims(), input.dims(), "aten::logit_backward");
  const ElementType c = elementwise_compute_type(out);
  hlo::Value g = broadcast_to(b, convert_to(b, grad, c), dims);
  hlo::Value x = broadcast_to(b, convert_to(b, input, c), dims);
  hlo::Value r = b.divide(g, b.multiply(x, b.subtract(k(b, 1, x), x)));
  if (eps) {
    hlo::Value lo = convert_to(b, convert_to(b, *eps, out), c);
    hlo::Value hi = convert_to(b, convert_to(b, b.subtract(k(b, 1, lo), lo), out), c);
    hlo::Value outside = b.or_(b.compare(x, broadcast_to(b, lo, dims), "LT"),
                               b.compare(x, broadcast_to(b, hi, dims), "GT"));
    r = b.select(outside, k(b, 0, r), r);
  } else {
    hlo::Value outside = b.or_(b.compare(x, k(b, 0, x), "LT"), b.compare(x, k(b, 1, x), "GT"));
    r = b.select(outside, k(b, NAN, r), r);
  }
  return convert_to(b, r, out);
}

}  // namespace torch_tpu::ops
