#include "ops/elementwise/complex_math.h"

#include <cmath>

#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

using hlo::Value;

// s * t where a zero s gives a zero of the product's sign even when t is
// infinite or NaN: sin(0 + 100i) is 0 + inf i although cosh(100) = inf in f32.
Value times(hlo::Builder& b, const Value& s, const Value& t) {
  Value zero_product = b.select(sign_bit(b, t), b.negate(s), s);
  return b.select(b.compare(s, splat_like(b, 0, s), "EQ"), zero_product, b.multiply(s, t));
}

Value sinh(hlo::Builder& b, const Value& x) { return b.unary("chlo.sinh", x); }
Value cosh(hlo::Builder& b, const Value& x) { return b.unary("chlo.cosh", x); }

// Predicates and constants of a part's shape and type.
Value is_zero(hlo::Builder& b, const Value& v) { return b.compare(v, splat_like(b, 0, v), "EQ"); }
Value is_inf(hlo::Builder& b, const Value& v) { return b.compare(b.abs(v), splat_like(b, INFINITY, v), "EQ"); }
// Infinite or NaN.
Value not_finite(hlo::Builder& b, const Value& v) {
  return b.not_(b.compare(b.abs(v), splat_like(b, INFINITY, v), "LT"));
}
Value nan_like(hlo::Builder& b, const Value& v) { return splat_like(b, NAN, v); }
// copysign(magnitude, sign): the constant with the sign bit of each element.
Value with_sign_of(hlo::Builder& b, double magnitude, const Value& sign) {
  return b.select(sign_bit(b, sign), splat_like(b, -magnitude, sign), splat_like(b, magnitude, sign));
}

// Where `when` holds, the result is re + i im instead of (re0, im0): the
// special values of C99 Annex G laid over the general formulas.
struct Parts {
  Value re, im;
  void set(hlo::Builder& b, const Value& when, const Value& new_re, const Value& new_im) {
    re = b.select(when, new_re, re);
    im = b.select(when, new_im, im);
  }
};

}  // namespace

// sin(x + iy) = sin x cosh y + i cos x sinh y
Value complex_sin(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  Parts r{times(b, b.sine(x), cosh(b, y)), times(b, b.cosine(x), sinh(b, y))};
  // sin(+-inf or NaN + iy): NaN + i y for a zero y, NaN + i inf for an infinite one.
  const Value x_bad = not_finite(b, x);
  r.set(b, b.and_(x_bad, is_zero(b, y)), nan_like(b, x), y);
  r.set(b, b.and_(x_bad, is_inf(b, y)), nan_like(b, x), splat_like(b, INFINITY, y));
  return b.complex(r.re, r.im);
}

// cos(x + iy) = cos x cosh y - i sin x sinh y
Value complex_cos(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  Parts r{times(b, b.cosine(x), cosh(b, y)), b.negate(times(b, b.sine(x), sinh(b, y)))};
  const Value x_bad = not_finite(b, x);
  r.set(b, b.and_(is_zero(b, x), b.compare(y, y, "NE")), nan_like(b, x), x);
  r.set(b, b.and_(x_bad, is_zero(b, y)), nan_like(b, x), splat_like(b, 0, y));
  r.set(b, b.and_(x_bad, is_inf(b, y)), splat_like(b, INFINITY, x), nan_like(b, y));
  return b.complex(r.re, r.im);
}

// sinh(x + iy) = sinh x cos y + i cosh x sin y
Value complex_sinh(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  Parts r{times(b, b.cosine(y), sinh(b, x)), times(b, b.sine(y), cosh(b, x))};
  // An infinite or NaN y: +-0 + NaN i for a zero x, inf + NaN i for an infinite one.
  const Value y_bad = not_finite(b, y);
  r.set(b, b.and_(y_bad, is_zero(b, x)), x, nan_like(b, y));
  r.set(b, b.and_(y_bad, is_inf(b, x)), splat_like(b, INFINITY, x), nan_like(b, y));
  return b.complex(r.re, r.im);
}

// cosh(x + iy) = cosh x cos y + i sinh x sin y
Value complex_cosh(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  Parts r{times(b, b.cosine(y), cosh(b, x)), times(b, b.sine(y), sinh(b, x))};
  const Value y_bad = not_finite(b, y);
  r.set(b, b.and_(y_bad, is_zero(b, x)), nan_like(b, x), splat_like(b, 0, y));
  r.set(b, b.and_(y_bad, is_inf(b, x)), splat_like(b, INFINITY, x), nan_like(b, y));
  return b.complex(r.re, r.im);
}

// exp(x + iy) = e^x cos y + i e^x sin y. Where e^x overflows, it is applied
// as two halves, so that a product that fits does not overflow (exp(89 + i)).
Value complex_exp(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  const Value c = b.cosine(y), s = b.sine(y);
  const Value e = b.exponential(x);
  const Value half = b.exponential(b.multiply(x, splat_like(b, 0.5, x)));
  const Value overflow = b.compare(e, splat_like(b, INFINITY, e), "EQ");
  Parts r{b.select(overflow, b.multiply(b.multiply(half, c), half), b.multiply(e, c)),
          b.select(overflow, b.multiply(b.multiply(half, s), half), b.multiply(e, s))};
  // A zero y stays (its sign too) whatever x is: exp(inf - 0i) = inf - 0i.
  r.im = b.select(is_zero(b, y), y, r.im);
  // An infinite or NaN y: inf + NaN i for x = +inf, a zero for x = -inf.
  const Value y_bad = not_finite(b, y);
  const Value inf = splat_like(b, INFINITY, x);
  r.set(b, b.and_(y_bad, b.compare(x, inf, "EQ")), inf, nan_like(b, y));
  const Value zero_im = b.select(b.compare(y, splat_like(b, -INFINITY, y), "EQ"), splat_like(b, -0.0, y),
                                 splat_like(b, 0, y));  // +0 for a NaN y, whatever its sign bit
  r.set(b, b.and_(y_bad, b.compare(x, b.negate(inf), "EQ")), splat_like(b, 0, x), zero_im);
  return b.complex(r.re, r.im);
}

// log z = log |z| + i arg z: an infinite part makes |z| infinite even when
// the other is NaN.
Value complex_log(hlo::Builder& b, const Value& z) {
  const Value w = b.log(z);
  const Value x = b.real(z), y = b.imag(z);
  const Value re = b.real(w);
  return b.complex(b.select(b.or_(is_inf(b, x), is_inf(b, y)), splat_like(b, INFINITY, re), re), b.imag(w));
}

// sqrt on the principal branch, through its symmetry (XLA's ignores the sign
// of a zero imaginary part: sqrt(-4 - 0i) came out +2i), with the special
// values: an infinite y gives inf + i y whatever x is; inf + NaN i gives
// inf + NaN i and -inf + NaN i gives NaN + inf i.
Value complex_sqrt(hlo::Builder& b, const Value& z) {
  const Value w = by_symmetry(b, z, false, [&](const Value& v) { return b.sqrt(v); });
  const Value x = b.real(z), y = b.imag(z);
  Parts r{b.real(w), b.imag(w)};
  const Value inf = splat_like(b, INFINITY, x);
  const Value y_nan = b.compare(y, y, "NE");
  r.set(b, b.and_(y_nan, b.compare(x, inf, "EQ")), inf, y);
  r.set(b, b.and_(y_nan, b.compare(x, b.negate(inf), "EQ")), nan_like(b, x), splat_like(b, INFINITY, y));
  r.set(b, is_inf(b, y), inf, y);
  return b.complex(r.re, r.im);
}

// tanh through XLA's, with the signs of zero parts and the special values
// of an infinite x (+-1 + i copysign(0, y) for an infinite y) and of a zero
// x with an infinite or NaN y (x + NaN i).
Value complex_tanh(hlo::Builder& b, const Value& z) {
  const Value w = b.tanh(z);
  const Value x = b.real(z), y = b.imag(z);
  Parts r{b.real(w), b.imag(w)};
  r.im = b.select(is_zero(b, y), y, r.im);
  r.set(b, b.and_(is_inf(b, x), b.or_(is_zero(b, y), is_inf(b, y))), with_sign_of(b, 1, x), with_sign_of(b, 0, y));
  r.set(b, b.and_(is_zero(b, x), not_finite(b, y)), x, nan_like(b, y));
  return b.complex(r.re, r.im);
}

// tan through XLA's, with the sign of a zero real part and the special
// values of an infinite or NaN x (NaN + i y for a zero y; copysign(0, x) +
// i copysign(1, y) for an infinite x and y).
Value complex_tan(hlo::Builder& b, const Value& z) {
  const Value w = b.tan(z);
  const Value x = b.real(z), y = b.imag(z);
  Parts r{b.real(w), b.imag(w)};
  r.re = b.select(is_zero(b, x), x, r.re);
  r.set(b, b.and_(not_finite(b, x), is_zero(b, y)), nan_like(b, x), y);
  r.set(b, b.and_(is_inf(b, x), is_inf(b, y)), with_sign_of(b, 0, x), with_sign_of(b, 1, y));
  return b.complex(r.re, r.im);
}

Value by_symmetry(hlo::Builder& b, const Value& z, bool odd, const std::function<Value(const Value&)>& f) {
  const Value x = b.real(z), y = b.imag(z);
  const Value w = f(b.complex(odd ? b.abs(x) : x, b.abs(y)));
  Value re = b.real(w), im = b.imag(w);
  if (odd) re = b.select(sign_bit(b, x), b.negate(re), re);
  im = b.select(sign_bit(b, y), b.negate(im), im);
  return b.complex(re, im);
}

Value complex_exp2(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  const Value ln2 = splat_like(b, std::log(2.0), x);
  return complex_exp(b, b.complex(b.multiply(x, ln2), b.multiply(y, ln2)));
}

}  // namespace torch_tpu::ops
