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

namespace {
thread_local int values_lock_depth = 0;
std::atomic<ValuesLock::ReleaseObserver> release_observer{nullptr};
}  // namespace

ValuesLock::ValuesLock() {
  values_mutex().lock();
  ++values_lock_depth;
}

ValuesLock::~ValuesLock() {
  --values_lock_depth;
  values_mutex().unlock();
  if (values_lock_depth == 0) {
    if (ReleaseObserver observe = release_observer.load(std::memory_order_relaxed)) observe();
  }
}

bool ValuesLock::held_by_this_thread() { return values_lock_depth > 0; }

void ValuesLock::set_release_observer(ReleaseObserver observer) { release_observer.store(observer); }

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
