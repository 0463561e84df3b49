#include "aten/fill_value_check.h"

#include <ATen/ops/gt.h>
#include <ATen/ops/isfinite.h>
#include <ATen/ops/isnan.h>
#include <ATen/ops/logical_and.h>
#include <ATen/ops/logical_or.h>
#include <ATen/ops/lt.h>
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

}  // namespace

void defer_fill_value_check(const at::Tensor& value, c10::ScalarType dst) {
  const c10::ScalarType src = value.scalar_type();
  if (src == dst || src == c10::ScalarType::Bool || c10::isComplexType(src)) return;
  const bool float_src = c10::isFloatingType(src);
  // Types that always fit: an integer into int64, a float into a wider float.
  if (!float_src && dst == c10::ScalarType::Long) return;
  if (float_src && c10::isFloatingType(dst) && c10::elementSize(src) < c10::elementSize(dst)) return;
  const std::optional<Range> range = range_of(dst);
  if (!range) return;
  // The limits are compared in a type that holds them and the value
  // exactly (a Scalar operand takes the tensor's type: int32's max as an
  // int16 would wrap to -1).
  at::Tensor bad;
  if (float_src) {
    // A float value is read as a double: NaN and infinities overflow an
    // integer type; a float type takes them, and refuses finite values
    // beyond its range.
    const at::Tensor v = src == c10::ScalarType::Double ? value : value.to(c10::ScalarType::Float);
    bad = at::logical_or(at::lt(v, range->lowest), at::gt(v, range->max));
    bad = c10::isFloatingType(dst) ? at::logical_and(bad, at::isfinite(v)) : at::logical_or(bad, at::isnan(v));
  } else {
    // An integer value is read as an int64_t; an unsigned type also takes
    // the negatives down to -max (c10::overflows without strict_unsigned).
    const at::Tensor v = value.to(c10::ScalarType::Long);
    const c10::Scalar lowest = range->is_unsigned ? c10::Scalar(-range->max.toLong()) : range->lowest;
    bad = at::logical_or(at::lt(v, lowest), at::gt(v, range->max));
  }
  defer_check(bad, CheckError::kRuntime,
              std::string("value cannot be converted to type ") + range->name + " without overflow");
}

}  // namespace torch_tpu::aten
