// Element types shared by the StableHLO builder and the PJRT client.
//
// This header is the one vocabulary for "what is in a buffer" below PyTorch:
// hlo/ prints these as MLIR types, pjrt/ maps them to PJRT buffer types, and
// the ATen glue maps c10::ScalarType onto them. It has no dependencies.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace torch_tpu {

enum class ElementType : uint8_t {
  kPred,  // bool, i1 in MLIR
  kS8,
  kS16,
  kS32,
  kS64,
  kU8,
  kU16,
  kU32,
  kU64,
  kF16,
  kBF16,
  kF32,
  kF64,
  kC64,
  kC128,
  // 8-bit floats (PyTorch's float8_*): "fn" has no infinity, "fnuz" no
  // negative zero either, and their NaN encodings differ.
  kF8E4M3FN,
  kF8E5M2,
  kF8E4M3FNUZ,
  kF8E5M2FNUZ,
};

inline constexpr int kNumElementTypes = 19;

// Bytes per element in a dense host buffer (bool takes one byte).
constexpr size_t element_size(ElementType t) {
  switch (t) {
    case ElementType::kPred:
    case ElementType::kS8:
    case ElementType::kU8:
    case ElementType::kF8E4M3FN:
    case ElementType::kF8E5M2:
    case ElementType::kF8E4M3FNUZ:
    case ElementType::kF8E5M2FNUZ:
      return 1;
    case ElementType::kS16:
    case ElementType::kU16:
    case ElementType::kF16:
    case ElementType::kBF16:
      return 2;
    case ElementType::kS32:
    case ElementType::kU32:
    case ElementType::kF32:
      return 4;
    case ElementType::kS64:
    case ElementType::kU64:
    case ElementType::kF64:
    case ElementType::kC64:
      return 8;
    case ElementType::kC128:
      return 16;
  }
  return 0;
}

// The MLIR spelling: "i1", "i32", "ui8", "bf16", "complex<f32>", ...
constexpr std::string_view mlir_name(ElementType t) {
  switch (t) {
    case ElementType::kPred: return "i1";
    case ElementType::kS8: return "i8";
    case ElementType::kS16: return "i16";
    case ElementType::kS32: return "i32";
    case ElementType::kS64: return "i64";
    case ElementType::kU8: return "ui8";
    case ElementType::kU16: return "ui16";
    case ElementType::kU32: return "ui32";
    case ElementType::kU64: return "ui64";
    case ElementType::kF16: return "f16";
    case ElementType::kBF16: return "bf16";
    case ElementType::kF32: return "f32";
    case ElementType::kF64: return "f64";
    case ElementType::kC64: return "complex<f32>";
    case ElementType::kC128: return "complex<f64>";
    case ElementType::kF8E4M3FN: return "f8E4M3FN";
    case ElementType::kF8E5M2: return "f8E5M2";
    case ElementType::kF8E4M3FNUZ: return "f8E4M3FNUZ";
    case ElementType::kF8E5M2FNUZ: return "f8E5M2FNUZ";
  }
  return "?";
}

// Short names used in the Python API and in messages: "pred", "s32",
// "u8", "bf16", "c64" (XLA's own spelling).
constexpr std::string_view short_name(ElementType t) {
  switch (t) {
    case ElementType::kPred: return "pred";
    case ElementType::kS8: return "s8";
    case ElementType::kS16: return "s16";
    case ElementType::kS32: return "s32";
    case ElementType::kS64: return "s64";
    case ElementType::kU8: return "u8";
    case ElementType::kU16: return "u16";
    case ElementType::kU32: return "u32";
    case ElementType::kU64: return "u64";
    case ElementType::kF16: return "f16";
    case ElementType::kBF16: return "bf16";
    case ElementType::kF32: return "f32";
    case ElementType::kF64: return "f64";
    case ElementType::kC64: return "c64";
    case ElementType::kC128: return "c128";
    case ElementType::kF8E4M3FN: return "f8e4m3fn";
    case ElementType::kF8E5M2: return "f8e5m2";
    case ElementType::kF8E4M3FNUZ: return "f8e4m3fnuz";
    case ElementType::kF8E5M2FNUZ: return "f8e5m2fnuz";
  }
  return "?";
}

inline std::optional<ElementType> element_type_from_short_name(
    std::string_view name) {
  for (int i = 0; i < kNumElementTypes; ++i) {
    auto t = static_cast<ElementType>(i);
    if (short_name(t) == name) return t;
  }
  return std::nullopt;
}

constexpr bool is_float8(ElementType t) {
  return t == ElementType::kF8E4M3FN || t == ElementType::kF8E5M2 ||
         t == ElementType::kF8E4M3FNUZ || t == ElementType::kF8E5M2FNUZ;
}

constexpr bool is_floating(ElementType t) {
  return t == ElementType::kF16 || t == ElementType::kBF16 ||
         t == ElementType::kF32 || t == ElementType::kF64 || is_float8(t);
}

// Floating types with an infinity: all but the 8-bit e4m3fn, e4m3fnuz and
// e5m2fnuz (which saturate or go to NaN instead).
constexpr bool has_infinity(ElementType t) {
  return is_floating(t) && t != ElementType::kF8E4M3FN &&
         t != ElementType::kF8E4M3FNUZ && t != ElementType::kF8E5M2FNUZ;
}

constexpr bool is_complex(ElementType t) {
  return t == ElementType::kC64 || t == ElementType::kC128;
}

// The type of a complex type's parts; real types are their own.
constexpr ElementType real_part_type(ElementType t) {
  if (t == ElementType::kC64) return ElementType::kF32;
  if (t == ElementType::kC128) return ElementType::kF64;
  return t;
}

constexpr bool is_unsigned(ElementType t) {
  return t == ElementType::kU8 || t == ElementType::kU16 ||
         t == ElementType::kU32 || t == ElementType::kU64;
}

constexpr bool is_signed_integer(ElementType t) {
  return t == ElementType::kS8 || t == ElementType::kS16 ||
         t == ElementType::kS32 || t == ElementType::kS64;
}

constexpr bool is_integer(ElementType t) {
  return is_signed_integer(t) || is_unsigned(t);
}

// The signed integer type of t's width: a float's bit pattern bitcast to it
// is negative exactly when the sign bit is set.
constexpr ElementType same_width_signed_int(ElementType t) {
  switch (element_size(t)) {
    case 1: return ElementType::kS8;
    case 2: return ElementType::kS16;
    case 4: return ElementType::kS32;
    default: return ElementType::kS64;
  }
}

}  // namespace torch_tpu
