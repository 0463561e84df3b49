// The PrivateUse1 hooks of the tpu device: what ATen asks a backend through
// at::globalContext() (availability, lazy init, current device, generators,
// pinned memory, pointers, storage resize).
#include <ATen/core/CachingHostAllocator.h>
#include <ATen/detail/PrivateUse1HooksInterface.h>
#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>
#include <c10/util/Exception.h>

#include <cstdlib>
#include <map>
#include <mutex>

#include "aten/device_guard.h"
#include "aten/generator.h"
#include "aten/storage_resize.h"
#include "runtime/current_device.h"
#include "runtime/runtime.h"
#include "runtime/storage_value.h"

namespace torch_tpu::aten {

namespace {

// Pinned memory is ordinary page-aligned host memory here: PJRT copies from
// any host buffer. The allocator keeps a table of its blocks so that
// Tensor.is_pinned() is truthful (True for memory it made, also for a
// pointer inside a block, False for anything else). It is also the tpu
// host allocator of torch.accelerator (empty_host_cache, host memory
// stats): without one registered, torch.accelerator.empty_host_cache()
// dereferenced a null allocator. It caches nothing (a block goes back to
// the system when freed) and PJRT has copied a host buffer before an upload
// returns, so there are no events to record.
class PinnedHostAllocator final : public at::HostAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    // One byte at least: every pinned storage gets a distinct, tracked address.
    size_t size = nbytes == 0 ? 1 : nbytes;
    void* ptr = nullptr;
    if (posix_memalign(&ptr, kAlignment, size) != 0 || ptr == nullptr) {
      TORCH_CHECK_WITH(OutOfMemoryError, false, "tpu: cannot allocate ", nbytes,
                       " bytes of pinned host memory");
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      blocks_[reinterpret_cast<uintptr_t>(ptr)] = size;
      stats_.active_requests.increase(1);
      stats_.active_bytes.increase(size);
      stats_.allocations.increase(1);
      stats_.allocated_bytes.increase(size);
      ++stats_.num_host_alloc;
    }
    return c10::DataPtr(ptr, ptr, &free_block, c10::Device(c10::DeviceType::CPU));
  }

  c10::DeleterFnPtr raw_deleter() const override { return &free_block; }

  void copy_data(void* dest, const void* src, std::size_t count) const override {
    default_copy_data(dest, src, count);
  }

  bool record_event(void*, void*, c10::Stream) override { return true; }
  void empty_cache() override {}

  at::HostStats get_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    return stats_;
  }

  void reset_accumulated_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations, &stats_.allocated_bytes}) {
      stat->reset_accumulated();
    }
    stats_.num_host_alloc = stats_.num_host_free = 0;
  }

  void reset_peak_stats() override {
    std::lock_guard<std::mutex> lock(mutex_);
    for (auto* stat : {&stats_.active_requests, &stats_.active_bytes, &stats_.allocations, &stats_.allocated_bytes}) {
      stat->reset_peak();
    }
  }

  void forget(void* ptr) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.find(reinterpret_cast<uintptr_t>(ptr));
    if (it == blocks_.end()) return;
    stats_.active_requests.decrease(1);
    stats_.active_bytes.decrease(it->second);
    stats_.allocations.decrease(1);
    stats_.allocated_bytes.decrease(it->second);
    ++stats_.num_host_free;
    blocks_.erase(it);
  }

  bool contains(const void* ptr) const {
    auto address = reinterpret_cast<uintptr_t>(ptr);
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = blocks_.upper_bound(address);
    if (it == blocks_.begin()) return false;
    --it;
    return address < it->first + it->second;
  }

 private:
  static constexpr size_t kAlignment = 4096;

  static void free_block(void* ptr);

  mutable std::mutex mutex_;
  std::map<uintptr_t, size_t> blocks_;
  at::HostStats stats_;
};

// Never destroyed: pinned tensors may outlive static destruction.
PinnedHostAllocator& pinned_allocator() {
  static auto* allocator = new PinnedHostAllocator();
  return *allocator;
}

void PinnedHostAllocator::free_block(void* ptr) {
  if (ptr == nullptr) return;
  pinned_allocator().forget(ptr);
  std::free(ptr);
}

class TpuHooks final : public at::PrivateUse1HooksInterface {
 public:
  bool isBuilt() const override { return true; }

  // Never throws and never loads the plugin: once the runtime exists, "at
  // least one device"; before, whether torch_tpu can find a plugin.
  bool isAvailable() const override {
    if (runtime::Runtime::is_initialized()) return runtime_device_count() > 0;
    return probe_available();
  }

  bool hasPrimaryContext(c10::DeviceIndex device_index) const override {
    return runtime::Runtime::is_initialized() && !in_bad_fork() && device_index >= 0 &&
           device_index < runtime_device_count();
  }

  // Best effort, never raises: everything that needs the runtime calls
  // ensure_runtime() itself and reports the failure there. So pinning host
  // memory works without a plugin (and in a forked DataLoader process).
  void init() const override {
    try {
      ensure_runtime();
    } catch (...) {
    }
  }

  c10::DeviceIndex deviceCount() const override { return runtime_device_count(); }

  void setCurrentDevice(c10::DeviceIndex device) const override {
    check_device_index(device);
    runtime::set_current_device(device);
  }

  c10::DeviceIndex getCurrentDevice() const override { return current_device_index(); }

  c10::DeviceIndex exchangeDevice(c10::DeviceIndex device) const override {
    return exchange_device_index(device);
  }

  // There is no per-device context to avoid creating, so this is
  // exchangeDevice.
  c10::DeviceIndex maybeExchangeDevice(c10::DeviceIndex device) const override {
    return exchange_device_index(device);
  }

  bool isPinnedPtr(const void* data) const override { return pinned_allocator().contains(data); }

  c10::Allocator* getPinnedMemoryAllocator() const override { return &pinned_allocator(); }

  // Storage addresses are reserved from one range for all devices, so the
  // range tells that a pointer is tpu memory but not which device's: the
  // answer is the current device.
  at::Device getDeviceFromPtr(void* data) const override {
    TORCH_CHECK(runtime::is_device_address(reinterpret_cast<uintptr_t>(data)), "pointer ",
                data, " is not tpu device memory");
    return at::Device(c10::DeviceType::PrivateUse1, current_device_index());
  }

  const at::Generator& getDefaultGenerator(c10::DeviceIndex device_index) const override {
    return default_generator(device_index);
  }

  at::Generator getNewGenerator(c10::DeviceIndex device_index) const override {
    return new_generator(device_index);
  }

  void resizePrivateUse1Bytes(const c10::Storage& storage, size_t new_bytes) const override {
    resize_storage_bytes(storage, new_bytes);
  }
};

[[maybe_unused]] const bool g_registered = [] {
  // Leaked on purpose: ATen keeps the pointer for the life of the process.
  at::RegisterPrivateUse1HooksInterface(new TpuHooks());
  at::setHostAllocator(at::kPrivateUse1, &pinned_allocator());
  return true;
}();

}  // namespace

}  // namespace torch_tpu::aten
