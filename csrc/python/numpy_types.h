// ElementType <-> NumPy dtype, for the binding layer only.
#pragma once

#include <pybind11/numpy.h>

#include <stdexcept>
#include <string>

#include "common/element_type.h"

namespace torch_tpu::python {

inline ElementType parse_element_type(const std::string& name) {
  auto type = element_type_from_short_name(name);
  if (!type) {
    throw std::invalid_argument("unknown element type '" + name +
                                "' (expected pred, s8..s64, u8..u64, f16, "
                                "bf16, f32, f64, c64, c128 or f8e4m3fn..f8e5m2fnuz)");
  }
  return *type;
}

// NumPy has no bfloat16 or 8-bit floats: they travel as unsigned bit
// patterns of their width.
inline pybind11::dtype numpy_dtype_of(ElementType type) {
  switch (type) {
    case ElementType::kPred: return pybind11::dtype("bool");
    case ElementType::kS8: return pybind11::dtype("int8");
    case ElementType::kS16: return pybind11::dtype("int16");
    case ElementType::kS32: return pybind11::dtype("int32");
    case ElementType::kS64: return pybind11::dtype("int64");
    case ElementType::kU8: return pybind11::dtype("uint8");
    case ElementType::kU16: return pybind11::dtype("uint16");
    case ElementType::kU32: return pybind11::dtype("uint32");
    case ElementType::kU64: return pybind11::dtype("uint64");
    case ElementType::kF16: return pybind11::dtype("float16");
    case ElementType::kBF16: return pybind11::dtype("uint16");
    case ElementType::kF32: return pybind11::dtype("float32");
    case ElementType::kF64: return pybind11::dtype("float64");
    case ElementType::kC64: return pybind11::dtype("complex64");
    case ElementType::kC128: return pybind11::dtype("complex128");
    case ElementType::kF8E4M3FN:
    case ElementType::kF8E5M2:
    case ElementType::kF8E4M3FNUZ:
    case ElementType::kF8E5M2FNUZ: return pybind11::dtype("uint8");
  }
  throw std::invalid_argument("no NumPy dtype for this element type");
}

inline ElementType element_type_of(const pybind11::dtype& dtype) {
  const char kind = dtype.kind();
  const auto size = dtype.itemsize();
  if (kind == 'b') return ElementType::kPred;
  if (kind == 'i') {
    switch (size) {
      case 1: return ElementType::kS8;
      case 2: return ElementType::kS16;
      case 4: return ElementType::kS32;
      case 8: return ElementType::kS64;
    }
  }
  if (kind == 'u') {
    switch (size) {
      case 1: return ElementType::kU8;
      case 2: return ElementType::kU16;
      case 4: return ElementType::kU32;
      case 8: return ElementType::kU64;
    }
  }
  if (kind == 'f') {
    switch (size) {
      case 2: return ElementType::kF16;
      case 4: return ElementType::kF32;
      case 8: return ElementType::kF64;
    }
  }
  if (kind == 'c') {
    switch (size) {
      case 8: return ElementType::kC64;
      case 16: return ElementType::kC128;
    }
  }
  throw std::invalid_argument("NumPy dtype '" + std::string(pybind11::str(pybind11::handle(dtype))) +
                              "' has no device element type");
}

}  // namespace torch_tpu::python
