#include "aten/captured_arguments.h"

#include <sstream>

#include "aten/scalar_cache.h"

namespace torch_tpu::aten {

namespace {

// An exact text of a scalar's value, for signatures.
std::string scalar_text(const ScalarInput& s) {
  std::ostringstream out;
  out << static_cast<int>(s.type) << ':';
  if (s.value.isFloatingPoint()) {
    out << std::hexfloat << s.value.toDouble();
  } else if (s.value.isComplex()) {
    const auto z = s.value.toComplexDouble();
    out << std::hexfloat << z.real() << ',' << z.imag();
  } else if (s.value.isBoolean()) {
    out << s.value.toBool();
  } else if (s.value.type() == c10::kUInt64) {
    out << s.value.to<uint64_t>();
  } else {
    out << s.value.toLong();
  }
  return out.str();
}

}  // namespace

std::string trace_arguments(const RanGraph& ran, const std::vector<RandomDraw>& draws,
                            std::vector<CapturedArgument>* arguments, std::string* signature) {
  using Kind = CapturedArgument::Kind;
  for (size_t k = 0; k < ran.parameters.size(); ++k) {
    const RanGraph::Parameter& p = ran.parameters[k];
    if (!p.scalar) {
      arguments->push_back({Kind::kBuffer, p.buffer, nullptr, -1});
      continue;
    }
    const ScalarInput& s = *p.scalar;
    if (s.role == ScalarRole::kValue) {
      arguments->push_back({Kind::kScalar, nullptr, cached_scalar_buffer(ran.device, s), -1});
      *signature += "s" + scalar_text(s) + ";";
      continue;
    }
    // A random op's seed, then the offset of the same draw.
    const bool paired = s.role == ScalarRole::kRandomSeed && k + 1 < ran.parameters.size() &&
                        ran.parameters[k + 1].scalar &&
                        ran.parameters[k + 1].scalar->role == ScalarRole::kRandomOffset;
    if (!paired) return "a random op's seed and offset are not consecutive arguments";
    const uint64_t seed = s.value.to<uint64_t>();
    const uint64_t offset = ran.parameters[k + 1].scalar->value.to<uint64_t>();
    int32_t draw = -1;
    for (size_t d = 0; d < draws.size(); ++d) {
      if (draws[d].seed != seed || draws[d].offset != offset) continue;
      if (draw >= 0) return "two random draws took the same seed and offset";
      draw = static_cast<int32_t>(d);
    }
    if (draw < 0) return "a random op's seed and offset come from no draw the capture saw";
    arguments->push_back({Kind::kSeed, nullptr, nullptr, draw});
    arguments->push_back({Kind::kOffset, nullptr, nullptr, draw});
    ++k;
  }
  return {};
}

runtime::DeviceBufferPtr seed_buffer(int device, uint64_t value) {
  return cached_scalar_buffer(device, {ElementType::kU64, c10::Scalar(value)});
}

}  // namespace torch_tpu::aten
