#include "ops/elementwise/special.h"

#include <cmath>

#include "ops/broadcast.h"
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

  // sum_k ((x/2)^2)^k / (k!)^2, on |x| clamped into the series' range
  hlo::Value xs = b.select(small, ax, k(b, 0, ax));
  hlo::Value q = b.multiply(b.multiply(xs, xs), k(b, 0.25, xs));
  hlo::Value term = k(b, 1, xs);
  hlo::Value series = term;
  for (int i = 1; i <= series_terms; ++i) {
    term = b.multiply(term, b.divide(q, k(b, static_cast<double>(i) * i, q)));
    series = b.add(series, term);
  }
  series = scaled ? b.multiply(series, b.exponential(b.negate(xs))) : series;

  // e^x / sqrt(2 pi x) * sum_k prod_j (2j - 1)^2 / (8 j x)
  hlo::Value xl = b.select(small, k(b, crossover, ax), ax);
  hlo::Value inv8x = b.divide(k(b, 0.125, xl), xl);
  term = k(b, 1, xl);
  hlo::Value sum = term;
  for (int j = 1; j <= asymptotic_terms; ++j) {
    const double odd = 2.0 * j - 1.0;
    term = b.multiply(term, b.multiply(inv8x, k(b, odd * odd / j, xl)));
    sum = b.add(sum, term);
  }
  hlo::Value asymptotic = b.multiply(sum, b.rsqrt(b.multiply(xl, k(b, 2 * kPi, xl))));
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

// ln|Gamma(x)|, +inf at the poles and at +-inf like std::lgamma.
hlo::Value lgamma(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value r = b.unary("chlo.lgamma", x);
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

hlo::Value special(hlo::Builder& b, SpecialOp op, const hlo::Value& x) {
  switch (op) {
    case SpecialOp::kAsin: return b.unary("chlo.asin", x);
    case SpecialOp::kAcos: return b.unary("chlo.acos", x);
    case SpecialOp::kAtan: return b.unary("chlo.atan", x);
    case SpecialOp::kSinh: return b.unary("chlo.sinh", x);
    case SpecialOp::kCosh: return b.unary("chlo.cosh", x);
    case SpecialOp::kAsinh: return b.unary("chlo.asinh", x);
    case SpecialOp::kAcosh: return b.unary("chlo.acosh", x);
    case SpecialOp::kAtanh: return b.unary("chlo.atanh", x);
    case SpecialOp::kExp2: return b.power(k(b, 2, x), x);
    case SpecialOp::kErfc: return b.unary("chlo.erfc", x);
    case SpecialOp::kLgamma: return lgamma(b, x);
    case SpecialOp::kDigamma: return digamma(b, x);
    case SpecialOp::kI0: return bessel_i0(b, x, false);
    case SpecialOp::kI0e: return bessel_i0(b, x, true);
    case SpecialOp::kI1: return bessel_i1(b, x, false);
    case SpecialOp::kI1e: return bessel_i1(b, x, true);
    case SpecialOp::kSinc: {
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

hlo::Value lower_polygamma(hlo::Builder& b, int64_t n, const hlo::Value& input, ElementType out) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(out));
  hlo::Value r;
  if (n == 0) {
    r = digamma(b, x);
  } else if (n == 1) {
    r = trigamma(b, x);
  } else {
    r = b.binary("chlo.polygamma", k(b, static_cast<double>(n), x), x);
    // at the poles (and -inf) n! zeta(n + 1, x) is infinite, with the sign of (-1)^(n + 1)
    hlo::Value pole = b.and_(b.compare(x, k(b, 0, x), "LE"), is_integral(b, x));
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
