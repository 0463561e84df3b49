#include "aten/scalar_cache.h"

#include <cstring>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>

#include <c10/util/TypeCast.h>
#include <c10/util/Float8_e4m3fn.h>
#include <c10/util/Float8_e4m3fnuz.h>
#include <c10/util/Float8_e5m2.h>
#include <c10/util/Float8_e5m2fnuz.h>

#include "aten/dtypes.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

namespace {

using runtime::DeviceBuffer;
using runtime::DeviceBufferPtr;

// The bits of `value` in an 8-bit float type. Scalar has no accessor for
// them; this raises on overflow as its accessors (and CPU's fill_) do.
template <typename Float8>
uint8_t checked_float8(const c10::Scalar& value, const char* name) {
  return c10::checked_convert<Float8, double>(value.toDouble(), name).x;
}

// Raw bytes of `value` converted to `type`, as the device stores it.
std::string scalar_bytes(const c10::Scalar& value, ElementType type) {
  std::string out(element_size(type), '\0');
  auto put = [&](auto v) { std::memcpy(out.data(), &v, sizeof v); };
  switch (type) {
    case ElementType::kPred: put(static_cast<uint8_t>(value.toBool())); break;
    case ElementType::kS8: put(value.to<int8_t>()); break;
    case ElementType::kS16: put(value.to<int16_t>()); break;
    case ElementType::kS32: put(value.to<int32_t>()); break;
    case ElementType::kS64: put(value.to<int64_t>()); break;
    case ElementType::kU8: put(value.to<uint8_t>()); break;
    case ElementType::kU16: put(value.to<uint16_t>()); break;
    case ElementType::kU32: put(value.to<uint32_t>()); break;
    case ElementType::kU64: put(value.to<uint64_t>()); break;
    case ElementType::kF16: put(value.to<c10::Half>().x); break;
    case ElementType::kBF16: put(value.to<c10::BFloat16>().x); break;
    case ElementType::kF32: put(value.to<float>()); break;
    case ElementType::kF64: put(value.to<double>()); break;
    case ElementType::kC64: put(value.to<c10::complex<float>>()); break;
    case ElementType::kC128: put(value.to<c10::complex<double>>()); break;
    case ElementType::kF8E4M3FN: put(checked_float8<c10::Float8_e4m3fn>(value, "c10::Float8_e4m3fn")); break;
    case ElementType::kF8E5M2: put(checked_float8<c10::Float8_e5m2>(value, "c10::Float8_e5m2")); break;
    case ElementType::kF8E4M3FNUZ: put(checked_float8<c10::Float8_e4m3fnuz>(value, "c10::Float8_e4m3fnuz")); break;
    case ElementType::kF8E5M2FNUZ: put(checked_float8<c10::Float8_e5m2fnuz>(value, "c10::Float8_e5m2fnuz")); break;
  }
  return out;
}

// Least recently used first in `order_`; a hit moves its entry to the back.
// Eviction drops one entry at a time, so a loop cycling through more values
// than the capacity re-uploads only the values it reaches again.
class ScalarCache {
 public:
  DeviceBufferPtr get(int device, ElementType type, const c10::Scalar& value) {
    std::string bytes = scalar_bytes(value, type);
    std::string key = bytes;
    key.push_back(static_cast<char>(type));
    key.push_back(static_cast<char>(device));
    {
      std::lock_guard<std::mutex> lock(mutex_);
      auto it = entries_.find(key);
      if (it != entries_.end()) {
        order_.splice(order_.end(), order_, it->second.position);
        return it->second.buffer;
      }
    }
    auto& client = runtime::Runtime::get().client();
    pjrt::Buffer buffer = client.buffer_from_host(bytes.data(), type, {}, {}, device);
    auto value_buffer = std::make_shared<DeviceBuffer>(std::move(buffer), hlo::TensorType::scalar(type),
                                                       device, /*counted=*/false);
    std::lock_guard<std::mutex> lock(mutex_);
    auto [it, inserted] = entries_.try_emplace(std::move(key));
    if (!inserted) return it->second.buffer;  // another thread uploaded it meanwhile
    it->second.buffer = value_buffer;
    it->second.position = order_.insert(order_.end(), &it->first);
    if (entries_.size() > kCapacity) {
      const std::string oldest = *order_.front();  // a copy: erase frees the key it points at
      order_.pop_front();
      entries_.erase(oldest);
    }
    return value_buffer;
  }

  size_t size() {
    std::lock_guard<std::mutex> lock(mutex_);
    return entries_.size();
  }

 private:
  struct Entry {
    DeviceBufferPtr buffer;
    std::list<const std::string*>::iterator position;
  };
  static constexpr size_t kCapacity = 4096;
  std::mutex mutex_;
  // Keys of an unordered_map keep their address until erased, so the
  // order list can point at them.
  std::unordered_map<std::string, Entry> entries_;
  std::list<const std::string*> order_;
};

ScalarCache& scalar_cache() {
  static auto* cache = new ScalarCache();  // outlives static destruction
  return *cache;
}

}  // namespace

DeviceBufferPtr cached_scalar_buffer(int device, const ScalarInput& scalar) {
  return scalar_cache().get(device, scalar.type, scalar.value);
}

size_t cached_scalar_count() { return scalar_cache().size(); }

}  // namespace torch_tpu::aten
