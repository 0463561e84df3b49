// PyTorch scalar types <-> the runtime's element types.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include "common/element_type.h"

namespace torch_tpu::aten {

inline bool has_element_type(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Bool:
    case c10::ScalarType::Char:
    case c10::ScalarType::Short:
    case c10::ScalarType::Int:
    case c10::ScalarType::Long:
    case c10::ScalarType::Byte:
    case c10::ScalarType::UInt16:
    case c10::ScalarType::UInt32:
    case c10::ScalarType::UInt64:
    case c10::ScalarType::Half:
    case c10::ScalarType::BFloat16:
    case c10::ScalarType::Float:
    case c10::ScalarType::Double:
    case c10::ScalarType::ComplexFloat:
    case c10::ScalarType::ComplexDouble:
    case c10::ScalarType::Float8_e4m3fn:
    case c10::ScalarType::Float8_e5m2:
    case c10::ScalarType::Float8_e4m3fnuz:
    case c10::ScalarType::Float8_e5m2fnuz:
      return true;
    default:
      return false;
  }
}

// Throws NotImplementedError naming `op` for types the device lacks (not a
// TypeError: Python's binary operators turn a TypeError into
// NotImplemented, which would hide the message).
inline ElementType to_element_type(c10::ScalarType t, const char* op = "tpu") {
  switch (t) {
    case c10::ScalarType::Bool: return ElementType::kPred;
    case c10::ScalarType::Char: return ElementType::kS8;
    case c10::ScalarType::Short: return ElementType::kS16;
    case c10::ScalarType::Int: return ElementType::kS32;
    case c10::ScalarType::Long: return ElementType::kS64;
    case c10::ScalarType::Byte: return ElementType::kU8;
    case c10::ScalarType::UInt16: return ElementType::kU16;
    case c10::ScalarType::UInt32: return ElementType::kU32;
    case c10::ScalarType::UInt64: return ElementType::kU64;
    case c10::ScalarType::Half: return ElementType::kF16;
    case c10::ScalarType::BFloat16: return ElementType::kBF16;
    case c10::ScalarType::Float: return ElementType::kF32;
    case c10::ScalarType::Double: return ElementType::kF64;
    case c10::ScalarType::ComplexFloat: return ElementType::kC64;
    case c10::ScalarType::ComplexDouble: return ElementType::kC128;
    case c10::ScalarType::Float8_e4m3fn: return ElementType::kF8E4M3FN;
    case c10::ScalarType::Float8_e5m2: return ElementType::kF8E5M2;
    case c10::ScalarType::Float8_e4m3fnuz: return ElementType::kF8E4M3FNUZ;
    case c10::ScalarType::Float8_e5m2fnuz: return ElementType::kF8E5M2FNUZ;
    default:
      TORCH_CHECK_NOT_IMPLEMENTED(false, op, ": dtype ", t, " is not supported on tpu");
  }
}

inline c10::ScalarType to_scalar_type(ElementType t) {
  switch (t) {
    case ElementType::kPred: return c10::ScalarType::Bool;
    case ElementType::kS8: return c10::ScalarType::Char;
    case ElementType::kS16: return c10::ScalarType::Short;
    case ElementType::kS32: return c10::ScalarType::Int;
    case ElementType::kS64: return c10::ScalarType::Long;
    case ElementType::kU8: return c10::ScalarType::Byte;
    case ElementType::kU16: return c10::ScalarType::UInt16;
    case ElementType::kU32: return c10::ScalarType::UInt32;
    case ElementType::kU64: return c10::ScalarType::UInt64;
    case ElementType::kF16: return c10::ScalarType::Half;
    case ElementType::kBF16: return c10::ScalarType::BFloat16;
    case ElementType::kF32: return c10::ScalarType::Float;
    case ElementType::kF64: return c10::ScalarType::Double;
    case ElementType::kC64: return c10::ScalarType::ComplexFloat;
    case ElementType::kC128: return c10::ScalarType::ComplexDouble;
    case ElementType::kF8E4M3FN: return c10::ScalarType::Float8_e4m3fn;
    case ElementType::kF8E5M2: return c10::ScalarType::Float8_e5m2;
    case ElementType::kF8E4M3FNUZ: return c10::ScalarType::Float8_e4m3fnuz;
    case ElementType::kF8E5M2FNUZ: return c10::ScalarType::Float8_e5m2fnuz;
  }
  return c10::ScalarType::Undefined;
}

}  // namespace torch_tpu::aten
