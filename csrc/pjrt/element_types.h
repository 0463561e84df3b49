// Mapping between the project's ElementType and PJRT buffer types.
#pragma once

#include <optional>

#include "common/element_type.h"
#include "pjrt/c_api.h"

namespace torch_tpu::pjrt {

constexpr c::BufferType to_pjrt(ElementType t) {
  switch (t) {
    case ElementType::kPred: return c::BufferType::kPred;
    case ElementType::kS8: return c::BufferType::kS8;
    case ElementType::kS16: return c::BufferType::kS16;
    case ElementType::kS32: return c::BufferType::kS32;
    case ElementType::kS64: return c::BufferType::kS64;
    case ElementType::kU8: return c::BufferType::kU8;
    case ElementType::kU16: return c::BufferType::kU16;
    case ElementType::kU32: return c::BufferType::kU32;
    case ElementType::kU64: return c::BufferType::kU64;
    case ElementType::kF16: return c::BufferType::kF16;
    case ElementType::kBF16: return c::BufferType::kBF16;
    case ElementType::kF32: return c::BufferType::kF32;
    case ElementType::kF64: return c::BufferType::kF64;
    case ElementType::kC64: return c::BufferType::kC64;
    case ElementType::kC128: return c::BufferType::kC128;
    case ElementType::kF8E4M3FN: return c::BufferType::kF8E4M3FN;
    case ElementType::kF8E5M2: return c::BufferType::kF8E5M2;
    case ElementType::kF8E4M3FNUZ: return c::BufferType::kF8E4M3FNUZ;
    case ElementType::kF8E5M2FNUZ: return c::BufferType::kF8E5M2FNUZ;
  }
  return c::BufferType::kInvalid;
}

inline std::optional<ElementType> from_pjrt(c::BufferType t) {
  for (int i = 0; i < kNumElementTypes; ++i) {
    auto e = static_cast<ElementType>(i);
    if (to_pjrt(e) == t) return e;
  }
  return std::nullopt;
}

}  // namespace torch_tpu::pjrt
