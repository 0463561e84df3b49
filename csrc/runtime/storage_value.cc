#include "runtime/storage_value.h"

#include <atomic>

namespace torch_tpu::runtime {

namespace {
// Above any user-space host address on x86-64 and aarch64 (47/48-bit), below
// the sign bit: pointer arithmetic on it stays well defined.
constexpr uintptr_t kBase = uintptr_t{1} << 52;
constexpr uintptr_t kLimit = uintptr_t{1} << 62;
constexpr uintptr_t kAlign = 4096;
std::atomic<uintptr_t> g_next{kBase};
}  // namespace

std::recursive_mutex& values_mutex() {
  static auto* mutex = new std::recursive_mutex();  // never destroyed: used until exit
  return *mutex;
}

uintptr_t reserve_address(size_t nbytes) {
  // A gap of one page between storages keeps one-past-the-end pointers of
  // a storage from equalling the start of the next.
  uintptr_t span = ((nbytes + kAlign - 1) / kAlign + 1) * kAlign;
  return g_next.fetch_add(span, std::memory_order_relaxed);
}

bool is_device_address(uintptr_t address) {
  return address >= kBase && address < kLimit;
}

}  // namespace torch_tpu::runtime
