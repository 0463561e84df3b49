#include "aten/fill_value_check.h"

#include <ATen/ops/gt.h>
#include <ATen/ops/imag.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/lt.h>
#include <ATen/ops/ne.h>
#include <ATen/ops/real.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>
#include <limits>
#include <optional>
#include <string>

#include "aten/deferred_checks.h"

namespace torch_tpu::aten {
namespace {

// The range c10::overflows accepts, and the name its message gives the type.
struct Range {
  c10::Scalar lowest, max;
  bool is_unsigned;
  const char* name;
};

template <typename T>
Range range_of(const char* name) {
  using L = std::numeric_limits<T>;
  if constexpr (std::is_integral_v<T>) {
    return {c10::Scalar(static_cast<int64_t>(L::lowest())),
            c10::Scalar(static_cast<int64_t>(std::min<uint64_t>(L::max(), std::numeric_limits<int64_t>::max()))),
            !L::is_signed, name};
  } else {
    return {c10::Scalar(static_cast<double>(L::lowest())), c10::Scalar(static_cast<double>(L::max())), false, name};
  }
}

std::optional<Range> range_of(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Byte: return range_of<uint8_t>("uint8_t");
    case c10::ScalarType::Char: return range_of<int8_t>("int8_t");
    case c10::ScalarType::Short: return range_of<int16_t>("int16_t");
    case c10::ScalarType::Int: return range_of<int32_t>("int");
    case c10::ScalarType::Long: return range_of<int64_t>("int64_t");
    case c10::ScalarType::UInt16: return range_of<uint16_t>("uint16_t");
    case c10::ScalarType::UInt32: return range_of<uint32_t>("uint32_t");
    case c10::ScalarType::Half: return range_of<c10::Half>("c10::Half");
    case c10::ScalarType::BFloat16: return range_of<c10::BFloat16>("c10::BFloat16");
    case c10::ScalarType::Float: return range_of<float>("float");
    default: return std::nullopt;  // bool, double, uint64 (never refused), complex, float8
  }
}

// Where a float value, read as a double, does not fit `range`: NaN and
// infinities overflow an integer type; a float type takes them, and refuses
// finite values beyond its range.
at::Tensor float_overflows(const at::Tensor& value, const Range& range, bool float_dst) {
  const at::Tensor v = value.scalar_type() == c10::ScalarType::Double ? value : value.to(c10::ScalarType::Float);
  const at::Tensor bad = at::logical_or(at::lt(v, range.lowest), at::gt(v, range.max));
  return float_dst ? at::logical_and(bad, at::isfinite(v)) : at::logical_or(bad, at::isnan(v));
}

void defer_overflow_check(const at::Tensor& bad, const char* type_name) {
  defer_check(bad, CheckError::kRuntime, std::string("value cannot be converted to type ") + type_name +
                                             " without overflow");
}

// A complex value: into a real type it overflows where its imaginary part
// is not zero or its real part does not fit; into complex64 where a part
// does not fit float (c10::overflows of a complex).
void defer_complex_value_check(const at::Tensor& value, c10::ScalarType dst) {
  const at::Tensor re = at::real(value), im = at::imag(value);
  if (c10::isComplexType(dst)) {
    if (dst != c10::ScalarType::ComplexFloat || value.scalar_type() != c10::ScalarType::ComplexDouble) return;
    const Range range = range_of<float>("c10::complex<float>");
    defer_overflow_check(at::logical_or(float_overflows(re, range, true), float_overflows(im, range, true)),
                         range.name);
    return;
  }
  at::Tensor bad = at::ne(im, 0);
  const std::optional<Range> range = range_of(dst);
  if (range) bad = at::logical_or(bad, float_overflows(re, *range, c10::isFloatingType(dst)));
  const char* name = range ? range->name
                     : dst == c10::ScalarType::Double ? "double"
                     : dst == c10::ScalarType::Bool   ? "bool"
                                                      : c10::toString(dst);
  defer_overflow_check(bad, name);
}

}  // namespace

void defer_fill_value_check(const at::Tensor& value, c10::ScalarType dst) {
  const c10::ScalarType src = value.scalar_type();
  if (src == dst || src == c10::ScalarType::Bool) return;
  if (c10::isComplexType(src)) return defer_complex_value_check(value, dst);
  const bool float_src = c10::isFloatingType(src);
  // Types that always fit: an integer into int64, a float into a wider float.
  if (!float_src && dst == c10::ScalarType::Long) return;
  if (float_src && c10::isFloatingType(dst) && c10::elementSize(src) < c10::elementSize(dst)) return;
  const std::optional<Range> range = range_of(dst);
  if (!range) return;
  // The limits are compared in a type that holds them and the value
  // exactly (a Scalar operand takes the tensor's type: int32's max as an
  // int16 would wrap to -1).
  if (float_src) return defer_overflow_check(float_overflows(value, *range, c10::isFloatingType(dst)), range->name);
  // An integer value is read as an int64_t; an unsigned type also takes
  // the negatives down to -max (c10::overflows without strict_unsigned).
  const at::Tensor v = value.to(c10::ScalarType::Long);
  const c10::Scalar lowest = range->is_unsigned ? c10::Scalar(-range->max.toLong()) : range->lowest;
  defer_overflow_check(at::logical_or(at::lt(v, lowest), at::gt(v, range->max)), range->name);
}

}  // namespace torch_tpu::aten
