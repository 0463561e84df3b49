// Elementwise ops, compare / select / clamp, and element type conversions.
#include <initializer_list>
#include <iterator>
#include <vector>

#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

bool is_predicate_op(std::string_view op) {
  return op == "stablehlo.is_finite" || op == "chlo.is_inf" ||
         op == "chlo.is_pos_inf" || op == "chlo.is_neg_inf";
}

bool drops_complex(std::string_view op) {
  return op == "stablehlo.real" || op == "stablehlo.imag" ||
         op == "stablehlo.abs";
}

int bit_width(ElementType t) { return static_cast<int>(element_size(t)) * 8; }

ElementType component_of(ElementType complex) {
  return complex == ElementType::kC128 ? ElementType::kF64 : ElementType::kF32;
}

std::vector<int64_t> with_tail(std::vector<int64_t> dims, std::initializer_list<int64_t> tail) {
  dims.insert(dims.end(), tail);
  return dims;
}

// StableHLO has no bitcast of complex types. A complex element is its
// (real, imag) pair of floats in memory, so a complex bitcast goes through
// that pair: [..., 2] floats of the component type. The result dims follow
// the same rules as any bitcast (checked by the plain bitcasts it uses).
Value bitcast_complex(Builder& b, const Value& x, const TensorType& to) {
  if (x.dtype() == to.dtype && x.dims() == to.dims) return x;
  if (is_complex(x.dtype()) && is_complex(to.dtype)) {
    // Through 64-bit integers (one per c64, two per c128).
    const std::vector<int64_t> dims =
        bit_width(x.dtype()) == 128 ? with_tail(x.dims(), {2}) : x.dims();
    return bitcast_complex(b, bitcast_complex(b, x, TensorType(ElementType::kU64, dims)), to);
  }
  if (is_complex(x.dtype())) {
    const ElementType c = component_of(x.dtype());
    const int pair_bits = bit_width(x.dtype()), c_bits = bit_width(c), to_bits = bit_width(to.dtype);
    const std::vector<int64_t> one = with_tail(x.dims(), {1});
    Value pair = b.concatenate({b.reshape(b.real(x), one), b.reshape(b.imag(x), one)}, x.rank());
    if (to_bits == pair_bits || to_bits == c_bits) return b.bitcast_convert(pair, to);
    if (to_bits < c_bits) {
      Value parts = b.bitcast_convert(pair, TensorType(to.dtype, with_tail(pair.dims(), {c_bits / to_bits})));
      return b.reshape(parts, to.dims);
    }
    // Wider than the pair: several pairs make one element.
    std::vector<int64_t> joined = x.dims();
    if (joined.empty()) check::fail("stablehlo.bitcast_convert", "bitcasting a 0-dim complex to a wider type");
    joined.back() *= 2;
    return b.bitcast_convert(b.reshape(pair, joined), to);
  }
  // To complex: build the [..., 2] pairs, then join them.
  const ElementType c = component_of(to.dtype);
  const int pair_bits = bit_width(to.dtype), c_bits = bit_width(c), from_bits = bit_width(x.dtype());
  const std::vector<int64_t> pair_dims = with_tail(to.dims, {2});
  Value pair;
  if (from_bits == pair_bits) {
    pair = b.bitcast_convert(x, TensorType(c, pair_dims));
  } else if (from_bits == c_bits) {
    pair = b.bitcast_convert(x, TensorType(c, x.dims()));
  } else if (from_bits < c_bits) {
    pair = b.bitcast_convert(b.reshape(x, with_tail(pair_dims, {c_bits / from_bits})), TensorType(c, pair_dims));
  } else {
    std::vector<int64_t> split = x.dims();
    split.push_back(2 * (from_bits / pair_bits));
    pair = b.reshape(b.bitcast_convert(x, TensorType(c, split)), pair_dims);
  }
  if (pair.dims() != pair_dims) {
    check::fail("stablehlo.bitcast_convert", "result type " + to.to_string() + " does not match " +
                                                 x.type().to_string());
  }
  const int64_t last = static_cast<int64_t>(to.dims.size());
  std::vector<int64_t> starts(pair_dims.size(), 0), limits = pair_dims, strides(pair_dims.size(), 1);
  limits[last] = 1;
  Value re = b.reshape(b.slice(pair, starts, limits, strides), to.dims);
  starts[last] = 1;
  limits[last] = 2;
  Value im = b.reshape(b.slice(pair, starts, limits, strides), to.dims);
  return b.complex(re, im);
}

}  // namespace

// ---- Generic ---------------------------------------------------------------

Value Builder::unary(std::string_view op_name, const Value& x) {
  check::op_name(op_name);
  check_operand(op_name, x);
  TensorType result = x.type();
  if (is_predicate_op(op_name)) {
    result.dtype = ElementType::kPred;
  } else if (drops_complex(op_name) && is_complex(x.dtype())) {
    result.dtype = real_part_type(x.dtype());
  }
  return append_op1(op_name, {x}, result);
}

Value Builder::binary(std::string_view op_name, const Value& a,
                      const Value& b) {
  check::op_name(op_name);
  check_operand(op_name, a);
  check_operand(op_name, b);
  check::same_type(op_name, a.type(), b.type());
  return append_op1(op_name, {a, b}, a.type());
}

// ---- Binary ----------------------------------------------------------------

// Operands are checked before their dtype so that a foreign or empty Value
// is reported as such rather than as a dtype problem.
#define TORCH_TPU_HLO_BINARY(method, name, allowed)                       \
  Value Builder::method(const Value& a, const Value& b) {                 \
    check_operand("stablehlo." name, a);                                  \
    check::dtype_in("stablehlo." name, "operand", a.dtype(), (allowed));  \
    return binary("stablehlo." name, a, b);                               \
  }

TORCH_TPU_HLO_BINARY(add, "add", check::kAny)
TORCH_TPU_HLO_BINARY(subtract, "subtract", check::kNumeric)
TORCH_TPU_HLO_BINARY(multiply, "multiply", check::kAny)
TORCH_TPU_HLO_BINARY(divide, "divide", check::kNumeric)
TORCH_TPU_HLO_BINARY(remainder, "remainder", check::kInt | check::kFloat)
TORCH_TPU_HLO_BINARY(maximum, "maximum", check::kAny)
TORCH_TPU_HLO_BINARY(minimum, "minimum", check::kAny)
TORCH_TPU_HLO_BINARY(power, "power", check::kNumeric)
TORCH_TPU_HLO_BINARY(atan2, "atan2", check::kFloatOrComplex)
TORCH_TPU_HLO_BINARY(and_, "and", check::kIntOrBool)
TORCH_TPU_HLO_BINARY(or_, "or", check::kIntOrBool)
TORCH_TPU_HLO_BINARY(xor_, "xor", check::kIntOrBool)
TORCH_TPU_HLO_BINARY(shift_left, "shift_left", check::kInt)
TORCH_TPU_HLO_BINARY(shift_right_arithmetic, "shift_right_arithmetic",
                     check::kInt)
TORCH_TPU_HLO_BINARY(shift_right_logical, "shift_right_logical", check::kInt)

#undef TORCH_TPU_HLO_BINARY

Value Builder::complex(const Value& real, const Value& imag) {
  constexpr std::string_view op = "stablehlo.complex";
  check_operand(op, real);
  check_operand(op, imag);
  check::same_type(op, real.type(), imag.type());
  if (real.dtype() != ElementType::kF32 && real.dtype() != ElementType::kF64) {
    check::fail(op, "operands must be f32 or f64, got " + real.type().to_string());
  }
  TensorType result = real.type();
  result.dtype = real.dtype() == ElementType::kF64 ? ElementType::kC128
                                                   : ElementType::kC64;
  return append_op1(op, {real, imag}, result);
}

// ---- Unary -----------------------------------------------------------------

#define TORCH_TPU_HLO_UNARY(method, name, allowed)                       \
  Value Builder::method(const Value& x) {                                \
    check_operand("stablehlo." name, x);                                 \
    check::dtype_in("stablehlo." name, "operand", x.dtype(), (allowed)); \
    return unary("stablehlo." name, x);                                     \
  }

TORCH_TPU_HLO_UNARY(abs, "abs",
                    check::kSignedInt | check::kFloat | check::kComplex)
TORCH_TPU_HLO_UNARY(negate, "negate", check::kNumeric)
TORCH_TPU_HLO_UNARY(exponential, "exponential", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(exponential_minus_one, "exponential_minus_one",
                    check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(log, "log", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(log_plus_one, "log_plus_one", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(sqrt, "sqrt", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(rsqrt, "rsqrt", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(cbrt, "cbrt", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(tanh, "tanh", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(logistic, "logistic", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(sine, "sine", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(cosine, "cosine", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(tan, "tan", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(floor, "floor", check::kFloat)
TORCH_TPU_HLO_UNARY(ceil, "ceil", check::kFloat)
TORCH_TPU_HLO_UNARY(round_nearest_afz, "round_nearest_afz", check::kFloat)
TORCH_TPU_HLO_UNARY(round_nearest_even, "round_nearest_even", check::kFloat)
TORCH_TPU_HLO_UNARY(sign, "sign",
                    check::kSignedInt | check::kFloat | check::kComplex)
TORCH_TPU_HLO_UNARY(not_, "not", check::kIntOrBool)
TORCH_TPU_HLO_UNARY(is_finite, "is_finite", check::kFloat)
TORCH_TPU_HLO_UNARY(popcnt, "popcnt", check::kInt)
TORCH_TPU_HLO_UNARY(count_leading_zeros, "count_leading_zeros", check::kInt)
TORCH_TPU_HLO_UNARY(real, "real", check::kFloatOrComplex)
TORCH_TPU_HLO_UNARY(imag, "imag", check::kFloatOrComplex)

#undef TORCH_TPU_HLO_UNARY

// ---- Compare, select, clamp ------------------------------------------------

namespace {

constexpr std::string_view kDirectionNames[] = {"EQ", "NE", "LT",
                                                "LE", "GT", "GE"};

}  // namespace

Value Builder::compare(const Value& a, const Value& b,
                       std::string_view direction) {
  for (size_t i = 0; i < std::size(kDirectionNames); ++i) {
    if (kDirectionNames[i] == direction) {
      return compare(a, b, static_cast<ComparisonDirection>(i));
    }
  }
  check::fail("stablehlo.compare", "unknown comparison direction '" +
                                       std::string(direction) +
                                       "' (expected EQ NE LT LE GT GE)");
}

Value Builder::compare(const Value& a, const Value& b,
                       ComparisonDirection direction) {
  constexpr std::string_view op = "stablehlo.compare";
  check_operand(op, a);
  check_operand(op, b);
  check::same_type(op, a.type(), b.type());
  auto index = static_cast<size_t>(direction);
  if (index >= std::size(kDirectionNames)) {
    check::fail(op, "invalid comparison direction");
  }
  const ElementType t = a.dtype();
  if (is_complex(t) && direction != ComparisonDirection::kEq &&
      direction != ComparisonDirection::kNe) {
    check::fail(op, "complex operands support only EQ and NE, got " +
                        std::string(kDirectionNames[index]));
  }
  const char* compare_type = (is_floating(t) || is_complex(t)) ? "FLOAT"
                             : is_signed_integer(t)            ? "SIGNED"
                                                               : "UNSIGNED";
  std::string attrs = "comparison_direction = #stablehlo<comparison_direction ";
  attrs += kDirectionNames[index];
  attrs += ">, compare_type = #stablehlo<comparison_type ";
  attrs += compare_type;
  attrs += '>';
  TensorType result(ElementType::kPred, a.dims());
  return append_op1(op, {a, b}, result, attrs);
}

Value Builder::maximum_in_reduction(const Value& a, const Value& b) {
  if (!is_floating(a.dtype())) return maximum(a, b);
  return select(or_(compare(a, b, ComparisonDirection::kGt), compare(a, a, ComparisonDirection::kNe)), a, b);
}

Value Builder::minimum_in_reduction(const Value& a, const Value& b) {
  if (!is_floating(a.dtype())) return minimum(a, b);
  return select(or_(compare(a, b, ComparisonDirection::kLt), compare(a, a, ComparisonDirection::kNe)), a, b);
}

Value Builder::select(const Value& pred, const Value& on_true,
                      const Value& on_false) {
  constexpr std::string_view op = "stablehlo.select";
  check_operand(op, pred);
  check_operand(op, on_true);
  check_operand(op, on_false);
  check::dtype_in(op, "pred", pred.dtype(), check::kBool);
  check::same_type(op, on_true.type(), on_false.type());
  if (!pred.type().is_scalar() && pred.dims() != on_true.dims()) {
    check::fail(op, "pred must be 0-dim or of the operands' shape: " +
                        pred.type().to_string() + " vs " +
                        on_true.type().to_string());
  }
  return append_op1(op, {pred, on_true, on_false}, on_true.type());
}

Value Builder::clamp(const Value& min, const Value& x, const Value& max) {
  constexpr std::string_view op = "stablehlo.clamp";
  check_operand(op, min);
  check_operand(op, x);
  check_operand(op, max);
  for (const Value* bound : {&min, &max}) {
    if (bound->dtype() != x.dtype() ||
        (!bound->type().is_scalar() && bound->dims() != x.dims())) {
      check::fail(op, "bounds must be 0-dim or of the operand's type: " +
                          bound->type().to_string() + " vs " +
                          x.type().to_string());
    }
  }
  return append_op1(op, {min, x, max}, x.type());
}

// ---- Conversions -----------------------------------------------------------

Value Builder::convert(const Value& x, ElementType to) {
  constexpr std::string_view op = "stablehlo.convert";
  check_operand(op, x);
  TensorType result(to, x.dims());
  check::valid_type(op, result);
  if (is_complex(x.dtype()) && !is_complex(to)) {
    check::fail(op, "complex to " + std::string(mlir_name(to)) +
                        " is not supported; take real() first");
  }
  return append_op1(op, {x}, result);
}

Value Builder::bitcast_convert(const Value& x, const TensorType& to) {
  constexpr std::string_view op = "stablehlo.bitcast_convert";
  check_operand(op, x);
  check::valid_type(op, to);
  if (is_complex(x.dtype()) || is_complex(to.dtype)) return bitcast_complex(*this, x, to);
  for (ElementType t : {x.dtype(), to.dtype}) {
    check::dtype_in(op, "element", t, check::kInt | check::kFloat);
  }
  const int from_bits = bit_width(x.dtype());
  const int to_bits = bit_width(to.dtype);
  std::vector<int64_t> expected = x.dims();
  if (from_bits > to_bits) {
    expected.push_back(from_bits / to_bits);
  } else if (from_bits < to_bits) {
    if (x.dims().empty() || x.dims().back() != to_bits / from_bits) {
      check::fail(op, "bitcasting " + x.type().to_string() + " to " +
                          std::string(mlir_name(to.dtype)) +
                          " needs a last dimension of " +
                          std::to_string(to_bits / from_bits));
    }
    expected.pop_back();
  }
  if (to.dims != expected) {
    check::fail(op, "result type " + to.to_string() + " does not match " +
                        x.type().to_string() + " (expected dims " +
                        dims_to_string(expected) + ")");
  }
  return append_op1(op, {x}, to);
}

Value Builder::reduce_precision(const Value& x, int32_t exponent_bits,
                                int32_t mantissa_bits) {
  constexpr std::string_view op = "stablehlo.reduce_precision";
  check_operand(op, x);
  check::dtype_in(op, "operand", x.dtype(), check::kFloat);
  if (exponent_bits < 1 || mantissa_bits < 0) {
    check::fail(op, "needs exponent_bits >= 1 and mantissa_bits >= 0");
  }
  std::string attrs = "exponent_bits = ";
  text::append_int(attrs, exponent_bits);
  attrs += " : i32, mantissa_bits = ";
  text::append_int(attrs, mantissa_bits);
  attrs += " : i32";
  return append_op1(op, {x}, x.type(), attrs);
}

}  // namespace torch_tpu::hlo
