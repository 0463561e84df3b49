#include "ops/elementwise/binary_math.h"
#include "ops/elementwise/incomplete_gamma.h"
#include "ops/elementwise/polynomials.h"

#include <cmath>
#include <numeric>
#include <vector>

#include "ops/broadcast.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

hlo::Value k(hlo::Builder& b, double v, const hlo::Value& like) { return splat_like(b, v, like); }

hlo::Value is_nan(hlo::Builder& b, const hlo::Value& x) { return b.compare(x, x, "NE"); }

hlo::Value copysign(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  hlo::Value ax = b.abs(x);
  return b.select(sign_bit(b, y), b.negate(ax), ax);
}

// sqrt(x^2 + y^2) without overflow or underflow in the squares.
hlo::Value hypot(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  hlo::Value ax = b.abs(x), ay = b.abs(y);
  hlo::Value big = b.maximum(ax, ay), small = b.minimum(ax, ay);
  hlo::Value safe = b.select(b.compare(big, k(b, 0, big), "EQ"), k(b, 1, big), big);
  hlo::Value ratio = b.divide(small, safe);
  hlo::Value r = b.multiply(big, b.sqrt(b.add(k(b, 1, ratio), b.multiply(ratio, ratio))));
  r = b.select(b.compare(big, k(b, 0, big), "EQ"), k(b, 0, big), r);
  // hypot(inf, NaN) is inf
  hlo::Value inf = b.or_(b.compare(ax, k(b, INFINITY, ax), "EQ"), b.compare(ay, k(b, INFINITY, ay), "EQ"));
  return b.select(inf, k(b, INFINITY, r), r);
}

hlo::Value logaddexp(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, bool base2) {
  hlo::Value m = b.select(b.compare(x, y, "LT"), y, x);
  hlo::Value d = b.negate(b.abs(b.subtract(x, y)));
  hlo::Value r = base2 ? b.multiply(b.log_plus_one(b.power(k(b, 2, d), d)), k(b, 1 / std::log(2.0), d))
                       : b.log_plus_one(b.exponential(d));
  r = b.add(m, r);
  hlo::Value same_inf = b.and_(b.compare(b.abs(x), k(b, INFINITY, x), "EQ"), b.compare(x, y, "EQ"));
  return b.select(same_inf, x, r);
}

hlo::Value xlogy(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, bool log1p) {
  hlo::Value r = b.multiply(x, log1p ? b.log_plus_one(y) : b.log(y));
  r = b.select(b.compare(x, k(b, 0, x), "EQ"), k(b, 0, r), r);
  return b.select(is_nan(b, y), y, r);
}

// The next representable value after x toward y, on the bit pattern.
hlo::Value nextafter(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  const hlo::TensorType int_type(same_width_signed_int(x.dtype()), x.dims());
  hlo::Value bits = b.bitcast_convert(x, int_type);
  hlo::Value one = splat_like(b, 1, bits);
  hlo::Value away_from_zero = b.compare(b.compare(x, y, "LT"), b.compare(x, k(b, 0, x), "GT"), "EQ");
  hlo::Value stepped = b.bitcast_convert(b.select(away_from_zero, b.add(bits, one), b.subtract(bits, one)),
                                         x.type());
  // from zero: the smallest subnormal with y's sign
  hlo::Value tiny = b.bitcast_convert(one, x.type());
  hlo::Value r = b.select(b.compare(x, k(b, 0, x), "EQ"), copysign(b, tiny, y), stepped);
  r = b.select(b.compare(x, y, "EQ"), y, r);
  return b.select(b.or_(is_nan(b, x), is_nan(b, y)), b.add(x, y), r);
}

hlo::Value fmax_fmin(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, bool max) {
  hlo::Value r = max ? b.maximum(x, y) : b.minimum(x, y);
  if (!is_floating(x.dtype())) return r;
  return b.select(is_nan(b, x), y, b.select(is_nan(b, y), x, r));
}

// y with zeros replaced by one: integer division by zero is flagged by the
// glue, and the value computed for it does not matter.
hlo::Value nonzero_divisor(hlo::Builder& b, const hlo::Value& y) {
  if (is_floating(y.dtype())) return y;
  return b.select(b.compare(y, k(b, 0, y), "EQ"), k(b, 1, y), y);
}

hlo::Value is_negative(hlo::Builder& b, const hlo::Value& x) {
  if (is_unsigned(x.dtype())) return b.constant_splat(0, hlo::TensorType(ElementType::kPred, x.dims()));
  return b.compare(x, k(b, 0, x), "LT");
}

// x mod y with the divisor's sign.
hlo::Value python_remainder(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  hlo::Value r = b.remainder(x, y);
  hlo::Value adjust = b.and_(b.compare(r, k(b, 0, r), "NE"), b.compare(is_negative(b, r), is_negative(b, y), "NE"));
  return b.select(adjust, b.add(r, y), r);
}

hlo::Value shift(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, bool left) {
  const int64_t bits = static_cast<int64_t>(element_size(x.dtype())) * 8;
  const bool is_signed = is_signed_integer(x.dtype());
  hlo::Value out_of_range = b.compare(y, k(b, static_cast<double>(bits - (left ? 0 : is_signed)), y), "GE");
  if (is_signed) out_of_range = b.or_(out_of_range, b.compare(y, k(b, 0, y), "LT"));
  if (left) return b.select(out_of_range, k(b, 0, x), b.shift_left(x, y));
  if (!is_signed) return b.select(out_of_range, k(b, 0, x), b.shift_right_logical(x, y));
  // a signed right shift past the width keeps only the sign
  return b.select(out_of_range, b.shift_right_arithmetic(x, k(b, static_cast<double>(bits - 1), x)),
                  b.shift_right_arithmetic(x, y));
}

hlo::Value any(hlo::Builder& b, const hlo::Value& pred) {
  std::vector<int64_t> dims(pred.dims().size());
  std::iota(dims.begin(), dims.end(), 0);
  hlo::Value init = b.constant_splat(0, hlo::TensorType(ElementType::kPred, {}));
  return b.reduce({pred}, {init}, dims,
                  [](hlo::Builder& r, const std::vector<hlo::Value>& a) {
                    return std::vector<hlo::Value>{r.or_(a[0], a[1])};
                  })
      .at(0);
}

// Euclid's algorithm on |x| and |y|, all elements stepping together until
// every remainder is zero.
hlo::Value gcd(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  const bool is_signed = is_signed_integer(x.dtype());
  hlo::Value a0 = is_signed ? b.abs(x) : x;
  hlo::Value b0 = is_signed ? b.abs(y) : y;
  auto loop = b.while_loop(
      {a0, b0},
      [](hlo::Builder& c, const std::vector<hlo::Value>& s) {
        return std::vector<hlo::Value>{any(c, c.compare(s[0], splat_like(c, 0, s[0]), "NE"))};
      },
      [](hlo::Builder& c, const std::vector<hlo::Value>& s) {
        hlo::Value nz = c.compare(s[0], splat_like(c, 0, s[0]), "NE");
        hlo::Value safe = c.select(nz, s[0], splat_like(c, 1, s[0]));
        return std::vector<hlo::Value>{c.select(nz, c.remainder(s[1], safe), s[0]), c.select(nz, s[0], s[1])};
      });
  return loop.at(1);
}

hlo::Value lcm(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  hlo::Value g = gcd(b, x, y);
  hlo::Value zero = b.compare(g, k(b, 0, g), "EQ");
  hlo::Value quotient = b.divide(x, b.select(zero, k(b, 1, g), g));
  hlo::Value r;
  if (x.dtype() == ElementType::kS8 || x.dtype() == ElementType::kS16) {
    // CPU's C++ promotes 8- and 16-bit operands to int: an overflowing
    // product is made positive before it wraps to the narrow type.
    r = b.abs(b.multiply(convert_to(b, quotient, ElementType::kS32), convert_to(b, y, ElementType::kS32)));
    r = convert_to(b, r, x.dtype());
  } else {
    r = b.multiply(quotient, y);
    if (is_signed_integer(r.dtype())) r = b.abs(r);
  }
  return b.select(zero, k(b, 0, r), r);
}

hlo::Value compute(hlo::Builder& b, BinaryMathOp op, const hlo::Value& x, const hlo::Value& y) {
  switch (op) {
    case BinaryMathOp::kAtan2: return b.atan2(x, y);
    case BinaryMathOp::kHypot: return hypot(b, x, y);
    case BinaryMathOp::kLogaddexp:
      return is_complex(x.dtype()) ? complex_logaddexp(b, x, y) : logaddexp(b, x, y, false);
    case BinaryMathOp::kLogaddexp2: return logaddexp(b, x, y, true);
    case BinaryMathOp::kXlogy: return xlogy(b, x, y, false);
    case BinaryMathOp::kXlog1py: return xlogy(b, x, y, true);
    case BinaryMathOp::kCopysign: return copysign(b, x, y);
    case BinaryMathOp::kNextafter: return nextafter(b, x, y);
    case BinaryMathOp::kHeaviside:
      return b.select(b.compare(x, k(b, 0, x), "EQ"), y, convert_to(b, b.compare(x, k(b, 0, x), "GT"), x.dtype()));
    case BinaryMathOp::kFmax: return fmax_fmin(b, x, y, true);
    case BinaryMathOp::kFmin: return fmax_fmin(b, x, y, false);
    case BinaryMathOp::kFmod: return b.remainder(x, nonzero_divisor(b, y));
    case BinaryMathOp::kRemainder: return python_remainder(b, x, nonzero_divisor(b, y));
    case BinaryMathOp::kFloorDivide: return floor_divide_same_type(b, x, nonzero_divisor(b, y));
    case BinaryMathOp::kShiftLeft: return shift(b, x, y, true);
    case BinaryMathOp::kShiftRight: return shift(b, x, y, false);
    case BinaryMathOp::kGcd: return gcd(b, x, y);
    case BinaryMathOp::kLcm: return lcm(b, x, y);
    case BinaryMathOp::kZeta: {
      // CPU's (Cephes') cases, in its order of precedence: s = 1 is a pole;
      // below it the Hurwitz series diverges (NaN); q = 0, -1, ... is a
      // pole for any other s, even NaN (a 0^-s term); for s = inf only the
      // q^-s term is left: 1 at q = 1, inf below.
      auto k = [&](double v) { return b.constant_splat(v, x.type()); };
      const hlo::Value infinite_s = b.compare(x, k(INFINITY), "EQ");
      const hlo::Value pole = b.and_(b.compare(y, k(0), "LE"), b.compare(y, b.floor(y), "EQ"));
      hlo::Value r = b.binary("chlo.zeta", x, y);
      // chlo.zeta gives NaN once q^-s over- or underflows (s = 1e4 in
      // float32) and 0 once its terms underflow though the sum does not
      // (q = 1e20, s = 2: 1e-20). There the Euler-Maclaurin sum with four
      // explicit terms stands: a large s leaves the first terms, a large q
      // the integral term q^(1 - s) / (s - 1). It is summed relative to
      // q^(1 - s), so that terms which would be subnormal (flushed to zero)
      // still count: (q + i)^-s = q^(1 - s) (1 + i / q)^-s / q.
      const hlo::Value finite = b.and_(b.is_finite(x), b.is_finite(y));
      const hlo::Value defined = b.and_(finite, b.and_(b.compare(x, k(1), "GT"), b.compare(y, k(0), "GT")));
      const hlo::Value s = b.select(defined, x, k(2)), q = b.select(defined, y, k(1));
      const hlo::Value minus_s = b.negate(s), inv_q = b.divide(k(1), q);
      hlo::Value sum = k(0);
      constexpr int kTerms = 4;
      for (int i = 0; i < kTerms; ++i) {
        sum = b.add(sum, b.multiply(inv_q, b.power(b.add(k(1), b.multiply(k(i), inv_q)), minus_s)));
      }
      const hlo::Value qn = b.add(q, k(kTerms));
      const hlo::Value u = b.divide(qn, q);
      const hlo::Value u_s = b.power(u, minus_s);
      sum = b.add(sum, b.divide(b.power(u, b.subtract(k(1), s)), b.subtract(s, k(1))));
      sum = b.add(sum, b.multiply(b.multiply(inv_q, u_s), k(0.5)));
      sum = b.add(sum, b.divide(b.multiply(s, u_s), b.multiply(b.multiply(q, qn), k(12))));
      sum = b.multiply(sum, b.power(q, b.subtract(k(1), s)));
      const hlo::Value chlo_failed = b.or_(b.compare(r, r, "NE"), b.compare(r, k(0), "EQ"));
      r = b.select(b.and_(defined, chlo_failed), sum, r);
      r = b.select(b.and_(infinite_s, b.compare(y, k(1), "LT")), k(INFINITY), r);
      r = b.select(b.and_(infinite_s, b.compare(y, k(1), "EQ")), k(1), r);
      r = b.select(pole, k(INFINITY), r);
      r = b.select(b.compare(x, k(1), "LT"), k(NAN), r);
      return b.select(b.compare(x, k(1), "EQ"), k(INFINITY), r);
    }
    case BinaryMathOp::kIgamma: return lower_incomplete_gamma(b, x, y, false);
    case BinaryMathOp::kIgammac: return lower_incomplete_gamma(b, x, y, true);
    case BinaryMathOp::kChebyshevT:
    case BinaryMathOp::kChebyshevU:
    case BinaryMathOp::kChebyshevV:
    case BinaryMathOp::kChebyshevW:
    case BinaryMathOp::kShiftedChebyshevT:
    case BinaryMathOp::kShiftedChebyshevU:
    case BinaryMathOp::kShiftedChebyshevV:
    case BinaryMathOp::kShiftedChebyshevW:
    case BinaryMathOp::kHermiteH:
    case BinaryMathOp::kHermiteHe:
    case BinaryMathOp::kLaguerreL:
    case BinaryMathOp::kLegendreP: return lower_polynomial(b, op, x, y);
  }
  throw hlo::HloError("lower_binary_math: unknown op");
}

// Ops whose bf16 / f16 results come from the bit pattern, not from f32.
bool in_own_type(BinaryMathOp op) {
  return op == BinaryMathOp::kNextafter || op == BinaryMathOp::kHeaviside || op == BinaryMathOp::kFmax ||
         op == BinaryMathOp::kFmin || op == BinaryMathOp::kCopysign;
}

}  // namespace

// By real part, the larger factored out; a NaN in either part of either
// operand gives NaN + NaN i; equal infinite real parts give the second
// operand (-inf) or the direct formula (+inf).
hlo::Value complex_logaddexp(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  const hlo::Value x_smaller = b.compare(b.real(x), b.real(y), "LT");
  const hlo::Value lo = b.select(x_smaller, x, y), hi = b.select(x_smaller, y, x);
  const hlo::Value general = b.add(hi, b.log_plus_one(b.exponential(b.subtract(lo, hi))));
  const hlo::Value lo_re = b.real(lo), hi_re = b.real(hi);
  const hlo::Value same_infinity =
      b.and_(b.compare(b.abs(lo_re), k(b, INFINITY, lo_re), "EQ"), b.compare(lo_re, hi_re, "EQ"));
  const hlo::Value at_infinity = b.select(b.compare(lo_re, k(b, 0, lo_re), "LT"), lo,
                                          b.log(b.add(b.exponential(lo), b.exponential(hi))));
  const hlo::Value r = b.select(same_infinity, at_infinity, general);
  const hlo::Value nan = b.constant_splat_complex(NAN, NAN, r.type());
  return b.select(b.or_(is_nan(b, x), is_nan(b, y)), nan, r);
}

hlo::Value floor_divide_same_type(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
  if (!is_floating(x.dtype())) {
    hlo::Value q = b.divide(x, y);
    if (is_unsigned(x.dtype())) return q;
    hlo::Value signs_differ = b.compare(is_negative(b, x), is_negative(b, y), "NE");
    hlo::Value inexact = b.compare(b.remainder(x, y), k(b, 0, x), "NE");
    return b.select(b.and_(signs_differ, inexact), b.subtract(q, k(b, 1, q)), q);
  }
  hlo::Value quotient = b.divide(x, y);
  hlo::Value mod = b.remainder(x, y);
  hlo::Value div = b.divide(b.subtract(x, mod), y);
  hlo::Value step = b.and_(b.compare(mod, k(b, 0, mod), "NE"),
                           b.compare(b.compare(y, k(b, 0, y), "LT"), b.compare(mod, k(b, 0, mod), "LT"), "NE"));
  div = b.select(step, b.subtract(div, k(b, 1, div)), div);
  hlo::Value fl = b.floor(div);
  fl = b.select(b.compare(b.subtract(div, fl), k(b, 0.5, div), "GT"), b.add(fl, k(b, 1, fl)), fl);
  hlo::Value r = b.select(b.compare(div, k(b, 0, div), "EQ"), copysign(b, k(b, 0, div), quotient), fl);
  return b.select(b.compare(y, k(b, 0, y), "EQ"), quotient, r);
}

hlo::Value any_zero(hlo::Builder& b, const hlo::Value& y) { return any(b, b.compare(y, k(b, 0, y), "EQ")); }

hlo::Value lower_binary_math(hlo::Builder& b, BinaryMathOp op, const hlo::Value& x, const hlo::Value& y,
                             ElementType out) {
  auto dims = broadcast_shapes(x.dims(), y.dims(), "binary math op");
  const ElementType c = in_own_type(op) ? out : elementwise_compute_type(out);
  hlo::Value l = broadcast_to(b, convert_to(b, x, c), dims);
  hlo::Value r = broadcast_to(b, convert_to(b, y, c), dims);
  return convert_to(b, compute(b, op, l, r), out);
}

}  // namespace torch_tpu::ops
