#include "ops/elementwise/unary.h"

#include <cmath>
#include <limits>

#include "ops/broadcast.h"
#include "ops/elementwise/complex_math.h"

namespace torch_tpu::ops {

ElementType elementwise_compute_type(ElementType t) {
  return (t == ElementType::kBF16 || t == ElementType::kF16) ? ElementType::kF32 : t;
}

hlo::Value splat_like(hlo::Builder& b, double v, const hlo::Value& like) {
  return b.constant_splat(v, like.type());
}

hlo::Value sign_bit(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value bits = b.bitcast_convert(x, hlo::TensorType(same_width_signed_int(x.dtype()), x.dims()));
  return b.compare(bits, splat_like(b, 0, bits), "LT");
}

hlo::Value conjugate(hlo::Builder& b, const hlo::Value& x) {
  return is_complex(x.dtype()) ? b.complex(b.real(x), b.negate(b.imag(x))) : x;
}

// XLA's f32 erf is a clamped rational approximation that levels off at
// +-0.99999982 (three ulps short of 1), while the correctly rounded erf is
// exactly +-1 from |x| >= 3.8325603. The shortfall is harmless in erf itself
// but not in 1 + erf(x): gelu(-1e6) came out as -0.09 instead of -0. So
// from that point on the result is sign(x).
hlo::Value erf(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value y = b.unary("chlo.erf", x);
  if (x.dtype() != ElementType::kF32) return y;
  hlo::Value saturated = b.compare(b.abs(x), splat_like(b, 3.8325603008270264, x), "GE");
  return b.select(saturated, b.sign(x), y);
}

namespace {

// erfinv, with one Newton step in float32 on XLA's approximation (which is
// off by up to 250 ulp near +-1: 1.5e-5 at 0.99983): on erf(y) = x below
// |x| = 1/2, and on erfc(|y|) = 1 - |x| above it, where 1 - |x| is exact
// and erfc keeps the relative accuracy erf loses next to 1.
hlo::Value erfinv(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value y = b.unary("chlo.erf_inv", x);
  if (x.dtype() != ElementType::kF32) return y;
  hlo::Value ax = b.abs(x), ay = b.abs(y);
  hlo::Value slope = b.multiply(splat_like(b, 1.1283791670955126, x), b.exponential(b.negate(b.multiply(y, y))));
  hlo::Value near_one = b.compare(ax, splat_like(b, 0.5, x), "GE");
  hlo::Value tail = b.subtract(b.unary("chlo.erfc", ay), b.subtract(splat_like(b, 1, x), ax));
  hlo::Value refined_tail = b.multiply(b.sign(x), b.add(ay, b.divide(tail, slope)));
  hlo::Value refined_middle = b.subtract(y, b.divide(b.subtract(b.unary("chlo.erf", y), x), slope));
  hlo::Value refined = b.select(near_one, refined_tail, refined_middle);
  // +-1 (infinite y), NaN and |x| > 1 keep XLA's answer.
  hlo::Value usable = b.and_(b.is_finite(y), b.compare(ax, splat_like(b, 1, x), "LT"));
  return b.select(usable, refined, y);
}

// z / c for a real constant c, part by part: a complex division would turn
// an infinite part into NaN (log(0) = -inf + 0i).
hlo::Value divide_by_real(hlo::Builder& b, const hlo::Value& z, double c) {
  if (!is_complex(z.dtype())) return b.divide(z, splat_like(b, c, z));
  const hlo::Value re = b.real(z), im = b.imag(z);
  return b.complex(b.divide(re, splat_like(b, c, re)), b.divide(im, splat_like(b, c, im)));
}

// |z| is infinite when either part is, even if the other is NaN (C's hypot).
hlo::Value complex_abs(hlo::Builder& b, const hlo::Value& z) {
  const hlo::Value r = b.abs(z);
  const hlo::Value inf = splat_like(b, INFINITY, r);
  const hlo::Value infinite_part =
      b.or_(b.compare(b.abs(b.real(z)), inf, "EQ"), b.compare(b.abs(b.imag(z)), inf, "EQ"));
  return b.select(infinite_part, inf, r);
}

hlo::Value all_false(hlo::Builder& b, const hlo::Value& x) {
  return b.constant_splat(0, hlo::TensorType(ElementType::kPred, x.dims()));
}

hlo::Value trunc(hlo::Builder& b, const hlo::Value& x) {
  return b.select(b.compare(x, splat_like(b, 0, x), "LT"), b.ceil(x), b.floor(x));
}

// sqrt on the principal branch (complex_math.h: sqrt(-1) is exactly 1j).
hlo::Value principal_sqrt(hlo::Builder& b, const hlo::Value& x) {
  return is_complex(x.dtype()) ? complex_sqrt(b, x) : b.sqrt(x);
}

// 1 / sqrt(x); complex as CPU computes it, through principal_sqrt (XLA's
// complex rsqrt goes through the polar form: rsqrt(-1) came out -4e-8 - 1j).
hlo::Value principal_rsqrt(hlo::Builder& b, const hlo::Value& x) {
  return is_complex(x.dtype()) ? b.divide(splat_like(b, 1, x), principal_sqrt(b, x)) : b.rsqrt(x);
}

// The float ops, on a value already in its (at least f32) compute type.
hlo::Value float_op(hlo::Builder& b, UnaryOp op, const hlo::Value& x) {
  switch (op) {
    case UnaryOp::kExp: return is_complex(x.dtype()) ? complex_exp(b, x) : b.exponential(x);
    case UnaryOp::kExpm1: return b.exponential_minus_one(x);
    case UnaryOp::kLog: return is_complex(x.dtype()) ? complex_log(b, x) : b.log(x);
    case UnaryOp::kLog1p: return b.log_plus_one(x);
    // Dividing by the rounded constant (not multiplying by its reciprocal)
    // keeps exact powers of the base exact.
    case UnaryOp::kLog2: return divide_by_real(b, float_op(b, UnaryOp::kLog, x), std::log(2.0));
    case UnaryOp::kLog10: return divide_by_real(b, float_op(b, UnaryOp::kLog, x), std::log(10.0));
    case UnaryOp::kSqrt: return principal_sqrt(b, x);
    case UnaryOp::kRsqrt: return principal_rsqrt(b, x);
    case UnaryOp::kSin: return is_complex(x.dtype()) ? complex_sin(b, x) : b.sine(x);
    case UnaryOp::kCos: return is_complex(x.dtype()) ? complex_cos(b, x) : b.cosine(x);
    case UnaryOp::kTan: return is_complex(x.dtype()) ? complex_tan(b, x) : b.tan(x);
    case UnaryOp::kTanh: return is_complex(x.dtype()) ? complex_tanh(b, x) : b.tanh(x);
    case UnaryOp::kSigmoid: return b.logistic(x);
    case UnaryOp::kReciprocal: return b.divide(splat_like(b, 1, x), x);
    case UnaryOp::kErf: return erf(b, x);
    case UnaryOp::kErfinv: return erfinv(b, x);
    default: break;
  }
  throw hlo::HloError("lower_unary: not a float op");
}

hlo::Value predicate_op(hlo::Builder& b, UnaryOp op, const hlo::Value& x) {
  const ElementType t = x.dtype();
  const bool fp = is_floating(t);
  // A complex value is NaN (or infinite) when either part is.
  if (is_complex(t) && (op == UnaryOp::kIsNan || op == UnaryOp::kIsInf)) {
    return b.or_(predicate_op(b, op, b.real(x)), predicate_op(b, op, b.imag(x)));
  }
  switch (op) {
    case UnaryOp::kLogicalNot:
      return t == ElementType::kPred ? b.not_(x) : b.compare(x, splat_like(b, 0, x), "EQ");
    case UnaryOp::kIsNan:
      return fp ? b.compare(x, x, "NE") : all_false(b, x);
    // (An infinity constant of a type without one would be its largest
    // finite value or NaN.)
    case UnaryOp::kIsInf:
      return has_infinity(t) ? b.compare(b.abs(x), splat_like(b, INFINITY, x), "EQ") : all_false(b, x);
    case UnaryOp::kIsPosInf:
      return has_infinity(t) ? b.compare(x, splat_like(b, INFINITY, x), "EQ") : all_false(b, x);
    case UnaryOp::kIsNegInf:
      return has_infinity(t) ? b.compare(x, splat_like(b, -INFINITY, x), "EQ") : all_false(b, x);
    case UnaryOp::kSignbit: {
      if (is_signed_integer(t)) return b.compare(x, splat_like(b, 0, x), "LT");
      return fp ? sign_bit(b, x) : all_false(b, x);
    }
    default: break;
  }
  throw hlo::HloError("lower_unary: not a predicate op");
}

}  // namespace

hlo::Value lower_unary(hlo::Builder& b, UnaryOp op, const hlo::Value& input, ElementType compute) {
  const hlo::Value x = convert_to(b, input, compute);
  const ElementType t = compute;
  const bool fp = is_floating(t);
  switch (op) {
    case UnaryOp::kNeg: return b.negate(x);
    case UnaryOp::kAbs:
      if (is_complex(t)) return complex_abs(b, x);
      return (is_unsigned(t) || t == ElementType::kPred) ? x : b.abs(x);
    case UnaryOp::kFloor: return fp ? b.floor(x) : x;
    case UnaryOp::kCeil: return fp ? b.ceil(x) : x;
    case UnaryOp::kRound: return fp ? b.round_nearest_even(x) : x;
    case UnaryOp::kTrunc: return fp ? trunc(b, x) : x;
    case UnaryOp::kFrac: return b.subtract(x, trunc(b, x));
    case UnaryOp::kSign:
      if (t == ElementType::kPred) return x;
      if (is_unsigned(t)) return b.convert(b.compare(x, splat_like(b, 0, x), "NE"), t);
      if (fp) {
        // NaN and -0.0 give +0.0 on CPU (XLA's sign keeps both).
        const hlo::Value zero = splat_like(b, 0, x);
        return b.select(b.or_(b.compare(x, x, "NE"), b.compare(x, zero, "EQ")), zero, b.sign(x));
      }
      return b.sign(x);
    case UnaryOp::kSgn: {
      if (!is_complex(t)) return lower_unary(b, UnaryOp::kSign, x, t);
      // z / |z| part by part, as CPU divides by the real magnitude: sgn(1 +
      // inf i) is 0 + NaN i and sgn(-0 + 2i) keeps the -0 (a complex
      // division gave NaN + NaN i and +0).
      const hlo::Value magnitude = complex_abs(b, x);
      const hlo::Value zero = splat_like(b, 0, magnitude);
      const hlo::Value unit = b.complex(b.divide(b.real(x), magnitude), b.divide(b.imag(x), magnitude));
      return b.select(b.compare(magnitude, zero, "EQ"), splat_like(b, 0, x), unit);
    }
    case UnaryOp::kBitwiseNot: return b.not_(x);
    case UnaryOp::kLogicalNot:
    case UnaryOp::kIsNan:
    case UnaryOp::kIsInf:
    case UnaryOp::kIsPosInf:
    case UnaryOp::kIsNegInf:
    case UnaryOp::kSignbit: return predicate_op(b, op, x);
    default: break;
  }
  // A float op: in f32 for bf16 / f16, rounded back once.
  return convert_to(b, float_op(b, op, convert_to(b, x, elementwise_compute_type(t))), t);
}

hlo::Value lower_round_decimals(hlo::Builder& b, const hlo::Value& input, int64_t decimals) {
  if (decimals == 0) return b.round_nearest_even(input);
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(input.dtype()));
  const bool negative = decimals < 0;
  const double ten_pow = std::pow(10.0, static_cast<double>(negative ? -decimals : decimals));
  // The factor is rounded to the compute type first, as PyTorch does.
  const hlo::Value p = splat_like(b, x.dtype() == ElementType::kF32 ? static_cast<float>(ten_pow) : ten_pow, x);
  hlo::Value r = negative ? b.multiply(b.round_nearest_even(b.divide(x, p)), p)
                          : b.divide(b.round_nearest_even(b.multiply(x, p)), p);
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_nan_to_num(hlo::Builder& b, const hlo::Value& x, const hlo::Value& nan,
                            const hlo::Value& posinf, const hlo::Value& neginf) {
  if (!is_floating(x.dtype())) return x;
  auto fill = [&](const hlo::Value& v) { return broadcast_to(b, convert_to(b, v, x.dtype()), x.dims()); };
  hlo::Value r = x;
  if (has_infinity(x.dtype())) {
    r = b.select(b.compare(x, splat_like(b, -INFINITY, x), "EQ"), fill(neginf), r);
    r = b.select(b.compare(x, splat_like(b, INFINITY, x), "EQ"), fill(posinf), r);
  }
  return b.select(b.compare(x, x, "NE"), fill(nan), r);
}

namespace {

// base ** exponent for a nonnegative integer exponent, by squaring over
// every bit of the type (XLA's integer power reads only the exponent's low
// bits, so 2 ** (2**32 + 2) came out as 4). Products wrap as in C.
hlo::Value integer_power(hlo::Builder& b, hlo::Value base, hlo::Value exponent) {
  const int bits = static_cast<int>(element_size(exponent.dtype()) * 8);
  hlo::Value one = splat_like(b, 1, exponent);
  hlo::Value result = splat_like(b, 1, base);
  for (int i = 0; i < bits; ++i) {
    hlo::Value bit_set = b.compare(b.and_(exponent, one), splat_like(b, 0, exponent), "NE");
    result = b.select(bit_set, b.multiply(result, base), result);
    if (i + 1 < bits) {
      base = b.multiply(base, base);
      exponent = b.shift_right_logical(exponent, one);
    }
  }
  return result;
}

}  // namespace

hlo::Value lower_pow(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out) {
  auto dims = broadcast_shapes(x.dims(), y.dims(), "aten::pow");
  const ElementType c = elementwise_compute_type(out);
  hlo::Value base = broadcast_to(b, convert_to(b, x, c), dims);
  hlo::Value exponent = broadcast_to(b, convert_to(b, y, c), dims);
  if (is_unsigned(c)) return convert_to(b, integer_power(b, base, exponent), out);
  if (is_complex(c)) {
    // exp(y log x) is NaN at x = 0; C's pow gives 1 for y = 0 and 0 for Re(y) > 0.
    hlo::Value zero = splat_like(b, 0, b.real(base));
    auto is_zero = [&](const hlo::Value& v) {
      return b.and_(b.compare(b.real(v), zero, "EQ"), b.compare(b.imag(v), zero, "EQ"));
    };
    hlo::Value zero_base = is_zero(base);
    hlo::Value r = b.power(base, exponent);
    // A positive real base to a real power is the real power: XLA's complex
    // one gives inf + NaN i where that overflows (C gives inf + 0i).
    hlo::Value real_base = b.real(base), real_exponent = b.real(exponent);
    hlo::Value both_real = b.and_(b.and_(b.compare(b.imag(base), zero, "EQ"), b.compare(b.imag(exponent), zero, "EQ")),
                                  b.compare(real_base, zero, "GT"));
    r = b.select(both_real, b.complex(b.power(real_base, real_exponent), zero), r);
    r = b.select(b.and_(zero_base, b.compare(b.real(exponent), zero, "GT")), splat_like(b, 0, r), r);
    return convert_to(b, b.select(b.and_(zero_base, is_zero(exponent)), splat_like(b, 1, r), r), out);
  }
  if (!is_signed_integer(c)) return convert_to(b, b.power(base, exponent), out);
  // C integer powers: b ** -n is 0 unless |b| == 1 (then 1, or -1 for odd n).
  hlo::Value zero = splat_like(b, 0, exponent);
  hlo::Value one = splat_like(b, 1, base);
  hlo::Value negative = b.compare(exponent, zero, "LT");
  hlo::Value positive_part = integer_power(b, base, b.select(negative, zero, exponent));
  hlo::Value odd = b.compare(b.remainder(exponent, splat_like(b, 2, exponent)), zero, "NE");
  hlo::Value minus_one_power = b.select(odd, splat_like(b, -1, base), one);
  hlo::Value negative_part =
      b.select(b.compare(base, one, "EQ"), one,
               b.select(b.compare(base, splat_like(b, -1, base), "EQ"), minus_one_power, splat_like(b, 0, base)));
  return b.select(negative, negative_part, positive_part);
}

bool is_special_pow_exponent(double e) {
  return e == 0 || e == 1 || e == 2 || e == 3 || e == 0.5 || e == -0.5 || e == -1 || e == -2;
}

hlo::Value lower_pow_special(hlo::Builder& b, const hlo::Value& input, double e, ElementType out) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(out));
  hlo::Value r;
  if (e == 0) {
    r = splat_like(b, 1, x);
  } else if (e == 1) {
    r = x;
  } else if (e == 2) {
    r = b.multiply(x, x);
  } else if (e == 3) {
    r = b.multiply(b.multiply(x, x), x);
  } else if (e == 0.5) {
    r = principal_sqrt(b, x);
  } else if (e == -0.5) {
    r = principal_rsqrt(b, x);
  } else if (e == -1) {
    r = b.divide(splat_like(b, 1, x), x);
  } else if (e == -2) {
    r = b.divide(splat_like(b, 1, x), b.multiply(x, x));
  } else {
    throw hlo::HloError("lower_pow_special: exponent is not special");
  }
  return convert_to(b, r, out);
}

}  // namespace torch_tpu::ops
