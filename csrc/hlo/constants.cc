// Constants and iota.
//
// Float splats print as exact bit patterns (dense<0x3F800000>) so that every
// value, inf and nan included, round-trips; dense data prints as a hex string
// of the raw little-endian bytes, except i1, whose raw form is bit-packed in
// MLIR and so prints as a list of true/false instead.
#include <cmath>
#include <cstring>
#include <limits>

#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

constexpr std::string_view kConstant = "stablehlo.constant";

// Rounds v to nearest-even in a binary float format with the given field
// widths (f16: 5/10, bf16: 8/7) and returns its bits. One rounding step from
// double, so no double-rounding error.
uint64_t encode_small_float(double v, int exp_bits, int mant_bits) {
  const uint64_t sign = std::signbit(v) ? 1 : 0;
  const uint64_t sign_bit = sign << (exp_bits + mant_bits);
  const uint64_t exp_all_ones = (uint64_t{1} << exp_bits) - 1;
  if (std::isnan(v)) {
    return sign_bit | (exp_all_ones << mant_bits) |
           (uint64_t{1} << (mant_bits - 1));  // quiet nan
  }
  if (std::isinf(v)) return sign_bit | (exp_all_ones << mant_bits);
  const double a = std::fabs(v);
  if (a == 0) return sign_bit;

  const int bias = (1 << (exp_bits - 1)) - 1;
  int e2 = 0;
  std::frexp(a, &e2);
  int exponent = e2 - 1;  // a = 1.f * 2^exponent
  if (exponent < 1 - bias) {
    // Subnormal: the mantissa counts units of 2^(1 - bias - mant_bits). A
    // round-up to 2^mant_bits lands exactly on the smallest normal's bits.
    double units = std::nearbyint(std::ldexp(a, mant_bits - (1 - bias)));
    return sign_bit | static_cast<uint64_t>(units);
  }
  double significand = std::nearbyint(std::ldexp(a, mant_bits - exponent));
  if (significand >= std::ldexp(1.0, mant_bits + 1)) {
    significand = std::ldexp(1.0, mant_bits);
    ++exponent;
  }
  if (exponent > bias) return sign_bit | (exp_all_ones << mant_bits);  // inf
  const uint64_t fraction =
      static_cast<uint64_t>(significand) - (uint64_t{1} << mant_bits);
  return sign_bit | (static_cast<uint64_t>(exponent + bias) << mant_bits) |
         fraction;
}

// The 8-bit float formats, as PyTorch and XLA define them: "fn" keeps the
// all-ones exponent for numbers (only S.1111.111 is NaN, no infinity);
// "fnuz" moves the bias up by one and spends the negative-zero pattern 0x80
// on its only NaN.
struct Float8Format {
  int exp_bits;
  int mant_bits;
  bool fnuz;
};

Float8Format float8_format(ElementType t) {
  switch (t) {
    case ElementType::kF8E4M3FN: return {4, 3, false};
    case ElementType::kF8E4M3FNUZ: return {4, 3, true};
    case ElementType::kF8E5M2FNUZ: return {5, 2, true};
    default: return {5, 2, false};  // f8E5M2: IEEE-like, never decoded here
  }
}

// The magnitude that positive pattern `bits` (0..127) stands for.
double float8_magnitude(uint32_t bits, const Float8Format& f) {
  const int bias = (1 << (f.exp_bits - 1)) - 1 + (f.fnuz ? 1 : 0);
  const uint32_t exponent = bits >> f.mant_bits;
  const uint32_t fraction = bits & ((1u << f.mant_bits) - 1);
  if (exponent == 0) return std::ldexp(fraction, 1 - bias - f.mant_bits);
  return std::ldexp((1u << f.mant_bits) + fraction, static_cast<int>(exponent) - bias - f.mant_bits);
}

// Rounds v to nearest-even in a format without infinity. Finite overflow
// follows PyTorch's casts: "fn" saturates at its largest finite value,
// "fnuz" becomes NaN. An infinity becomes the largest finite value in both:
// lowerings use +-inf constants as the identities of max and min, which
// that value is in a type without infinity.
uint64_t encode_float8_no_inf(double v, ElementType t) {
  const Float8Format f = float8_format(t);
  const uint32_t nan = f.fnuz ? 0x80 : 0x7F;
  if (std::isnan(v)) return nan;
  const uint32_t sign = std::signbit(v) ? 0x80 : 0;
  const uint32_t max_bits = f.fnuz ? 0x7F : 0x7E;
  if (std::isinf(v)) return sign | max_bits;
  const double a = std::fabs(v);
  const double max = float8_magnitude(max_bits, f);
  const double half_ulp_above = (max - float8_magnitude(max_bits - 1, f)) / 2;
  if (a >= max + half_ulp_above) return f.fnuz ? nan : sign | max_bits;
  uint32_t best = 0;  // patterns ascend in magnitude: take the last below
  while (best < max_bits && float8_magnitude(best + 1, f) <= a) ++best;
  if (best < max_bits) {
    const double below = float8_magnitude(best, f);
    const double above = float8_magnitude(best + 1, f);
    if (a - below > above - a || (a - below == above - a && (best & 1))) ++best;
  }
  if (best == 0 && f.fnuz) return 0;  // no negative zero
  return sign | best;
}

uint64_t float_bits(double v, ElementType t) {
  switch (t) {
    case ElementType::kF16:
      return encode_small_float(v, 5, 10);
    case ElementType::kBF16:
      return encode_small_float(v, 8, 7);
    case ElementType::kF8E5M2:
      return encode_small_float(v, 5, 2);
    case ElementType::kF8E4M3FN:
    case ElementType::kF8E4M3FNUZ:
    case ElementType::kF8E5M2FNUZ:
      return encode_float8_no_inf(v, t);
    case ElementType::kF32: {
      float f = static_cast<float>(v);
      uint32_t bits;
      std::memcpy(&bits, &f, sizeof(bits));
      return bits;
    }
    default: {
      uint64_t bits;
      std::memcpy(&bits, &v, sizeof(bits));
      return bits;
    }
  }
}

void append_float_splat(std::string& out, double v, ElementType t) {
  text::append_hex(out, float_bits(v, t),
                   static_cast<int>(element_size(t)) * 2);
}

void append_hex_bytes(std::string& out, const uint8_t* bytes, size_t n) {
  static constexpr char kHexDigits[] = "0123456789ABCDEF";
  out.reserve(out.size() + 2 * n + 4);
  out += "\"0x";
  for (size_t i = 0; i < n; ++i) {
    out += kHexDigits[bytes[i] >> 4];
    out += kHexDigits[bytes[i] & 0xF];
  }
  out += '"';
}

// A complex splat as the raw bytes of one element (MLIR reads a one-element
// hex buffer as a splat).
void append_complex_splat(std::string& out, double re, double im,
                          ElementType t) {
  uint8_t bytes[16];
  if (t == ElementType::kC64) {
    float parts[2] = {static_cast<float>(re), static_cast<float>(im)};
    std::memcpy(bytes, parts, 8);
    append_hex_bytes(out, bytes, 8);
  } else {
    double parts[2] = {re, im};
    std::memcpy(bytes, parts, 16);
    append_hex_bytes(out, bytes, 16);
  }
}

// Nested [[true, false], ...] for i1 data, one byte per element on input.
void append_bool_list(std::string& out, const uint8_t* bytes,
                      const std::vector<int64_t>& dims, size_t dim,
                      size_t* next) {
  if (dim == dims.size()) {
    out += bytes[(*next)++] ? "true" : "false";
    return;
  }
  out += '[';
  for (int64_t i = 0; i < dims[dim]; ++i) {
    if (i) out += ", ";
    append_bool_list(out, bytes, dims, dim + 1, next);
  }
  out += ']';
}

int64_t signed_max(ElementType t) {
  int bits = static_cast<int>(element_size(t)) * 8;
  return bits == 64 ? std::numeric_limits<int64_t>::max()
                    : (int64_t{1} << (bits - 1)) - 1;
}

uint64_t unsigned_max(ElementType t) {
  int bits = static_cast<int>(element_size(t)) * 8;
  return bits == 64 ? std::numeric_limits<uint64_t>::max()
                    : (uint64_t{1} << bits) - 1;
}

[[noreturn]] void out_of_range(const std::string& value, const TensorType& t) {
  check::fail(kConstant, "value " + value + " does not fit " + t.to_string());
}

// Ends "value = dense<..." with "> : tensor<...>".
void close_dense(std::string& attrs, const TensorType& t) {
  attrs += "> : ";
  t.append_to(attrs);
}

}  // namespace

Value Builder::constant_splat(double v, const TensorType& t) {
  check_open(kConstant);
  check::valid_type(kConstant, t);
  if (is_complex(t.dtype)) return constant_splat_complex(v, 0.0, t);
  if (is_integer(t.dtype)) {
    if (!std::isfinite(v) || std::trunc(v) != v) {
      check::fail(kConstant, "non-integral value " + std::to_string(v) +
                                 " for " + t.to_string());
    }
    // 2^63 and 2^64 are exact doubles: compare against them, then convert.
    if (is_unsigned(t.dtype)) {
      if (v < 0 || v >= 18446744073709551616.0) {
        out_of_range(std::to_string(v), t);
      }
      return constant_splat_uint(static_cast<uint64_t>(v), t);
    }
    if (v < -9223372036854775808.0 || v >= 9223372036854775808.0) {
      out_of_range(std::to_string(v), t);
    }
    return constant_splat_int(static_cast<int64_t>(v), t);
  }
  std::string attrs = "value = dense<";
  if (t.dtype == ElementType::kPred) {
    attrs += v != 0 ? "true" : "false";
  } else {
    append_float_splat(attrs, v, t.dtype);
  }
  close_dense(attrs, t);
  return append_op1(kConstant, {}, t, attrs);
}

Value Builder::constant_splat_int(int64_t v, const TensorType& t) {
  check_open(kConstant);
  check::valid_type(kConstant, t);
  if (is_floating(t.dtype) || is_complex(t.dtype)) {
    return constant_splat(static_cast<double>(v), t);
  }
  std::string attrs = "value = dense<";
  if (t.dtype == ElementType::kPred) {
    if (v != 0 && v != 1) out_of_range(std::to_string(v), t);
    attrs += v ? "true" : "false";
  } else if (is_unsigned(t.dtype)) {
    if (v < 0 || static_cast<uint64_t>(v) > unsigned_max(t.dtype)) {
      out_of_range(std::to_string(v), t);
    }
    text::append_int(attrs, v);
  } else {
    const int64_t max = signed_max(t.dtype);
    if (v > max || v < -max - 1) out_of_range(std::to_string(v), t);
    text::append_int(attrs, v);
  }
  close_dense(attrs, t);
  return append_op1(kConstant, {}, t, attrs);
}

Value Builder::constant_splat_uint(uint64_t v, const TensorType& t) {
  check_open(kConstant);
  check::valid_type(kConstant, t);
  if (!is_unsigned(t.dtype)) {
    if (v > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
      if (is_floating(t.dtype) || is_complex(t.dtype)) {
        return constant_splat(static_cast<double>(v), t);
      }
      out_of_range(std::to_string(v), t);
    }
    return constant_splat_int(static_cast<int64_t>(v), t);
  }
  if (v > unsigned_max(t.dtype)) out_of_range(std::to_string(v), t);
  std::string attrs = "value = dense<";
  text::append_uint(attrs, v);
  close_dense(attrs, t);
  return append_op1(kConstant, {}, t, attrs);
}

Value Builder::constant_splat_complex(double real, double imag,
                                      const TensorType& t) {
  check_open(kConstant);
  check::valid_type(kConstant, t);
  if (!is_complex(t.dtype)) {
    if (imag != 0) {
      check::fail(kConstant, "complex value for non-complex " + t.to_string());
    }
    return constant_splat(real, t);
  }
  std::string attrs = "value = dense<";
  append_complex_splat(attrs, real, imag, t.dtype);
  close_dense(attrs, t);
  return append_op1(kConstant, {}, t, attrs);
}

Value Builder::constant_bytes(const void* data, size_t nbytes,
                              const TensorType& t) {
  check_open(kConstant);
  check::valid_type(kConstant, t);
  const size_t count = static_cast<size_t>(t.num_elements());
  const size_t expected = count * element_size(t.dtype);
  if (nbytes != expected) {
    check::fail(kConstant, std::to_string(nbytes) + " bytes given for " +
                               t.to_string() + ", which needs " +
                               std::to_string(expected));
  }
  if (count > 0 && data == nullptr) check::fail(kConstant, "data is null");
  const auto* bytes = static_cast<const uint8_t*>(data);
  std::string attrs = "value = dense<";
  if (count == 0) {
    // An empty elements attribute has no body at all.
  } else if (t.dtype == ElementType::kPred) {
    size_t next = 0;
    append_bool_list(attrs, bytes, t.dims, 0, &next);
  } else {
    append_hex_bytes(attrs, bytes, nbytes);
  }
  close_dense(attrs, t);
  return append_op1(kConstant, {}, t, attrs);
}

Value Builder::iota(const TensorType& t, int64_t dim) {
  constexpr std::string_view op = "stablehlo.iota";
  check_open(op);
  check::valid_type(op, t);
  check::dtype_in(op, "result", t.dtype, check::kNumeric);
  check::dim_in_range(op, "iota_dimension", dim, t.rank());
  text::AttrList attrs;
  attrs.i64("iota_dimension", dim);
  return append_op1(op, {}, t, attrs.str());
}

}  // namespace torch_tpu::hlo
