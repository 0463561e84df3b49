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

}  // namespace

// sin(x + iy) = sin x cosh y + i cos x sinh y
Value complex_sin(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  return b.complex(times(b, b.sine(x), cosh(b, y)), times(b, b.cosine(x), sinh(b, y)));
}

// cos(x + iy) = cos x cosh y - i sin x sinh y
Value complex_cos(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  return b.complex(times(b, b.cosine(x), cosh(b, y)), b.negate(times(b, b.sine(x), sinh(b, y))));
}

// sinh(x + iy) = sinh x cos y + i cosh x sin y
Value complex_sinh(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  return b.complex(times(b, b.cosine(y), sinh(b, x)), times(b, b.sine(y), cosh(b, x)));
}

// cosh(x + iy) = cosh x cos y + i sinh x sin y
Value complex_cosh(hlo::Builder& b, const Value& z) {
  const Value x = b.real(z), y = b.imag(z);
  return b.complex(times(b, b.cosine(y), cosh(b, x)), times(b, b.sine(y), sinh(b, x)));
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
  return b.exponential(b.complex(b.multiply(x, ln2), b.multiply(y, ln2)));
}

}  // namespace torch_tpu::ops
