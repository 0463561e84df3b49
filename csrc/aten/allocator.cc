#include "aten/allocator.h"

#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>

#include "runtime/current_device.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

namespace {

void delete_storage_value(void* context) {
  delete static_cast<runtime::StorageValue*>(context);
}

// Device memory statistics in PyTorch's shape. Nothing is cached: a buffer
// is freed when its last user goes, so reserved == allocated == active.
c10::CachingDeviceAllocator::DeviceStats device_stats(c10::DeviceIndex device) {
  const runtime::DeviceMemoryStats& s = runtime::memory_stats(device);
  c10::CachingDeviceAllocator::DeviceStats out;
  const auto aggregate = static_cast<size_t>(c10::CachingDeviceAllocator::StatType::AGGREGATE);
  c10::CachingDeviceAllocator::Stat bytes;
  bytes.current = s.allocated.load();
  bytes.peak = s.peak.load();
  bytes.allocated = s.allocated_total.load();
  bytes.freed = s.freed_total.load();
  c10::CachingDeviceAllocator::Stat count;
  count.current = s.num_buffers.load();
  count.peak = count.current;
  count.allocated = s.num_allocs.load();
  count.freed = count.allocated - count.current;
  for (auto* array : {&out.allocated_bytes, &out.reserved_bytes, &out.active_bytes, &out.requested_bytes}) {
    (*array)[aggregate] = bytes;
  }
  out.allocation[aggregate] = count;
  out.segment[aggregate] = count;
  out.active[aggregate] = count;
  return out;
}

class TpuAllocator final : public c10::DeviceAllocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    auto device = static_cast<c10::DeviceIndex>(runtime::current_device());
    uintptr_t address = runtime::reserve_address(nbytes);
    auto* value = new runtime::StorageValue(device, nbytes, address);
    return c10::DataPtr(reinterpret_cast<void*>(address), value, &delete_storage_value,
                        c10::Device(c10::DeviceType::PrivateUse1, device));
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  bool initialized() override { return runtime::Runtime::is_initialized(); }
  // Nothing to release: no free buffers are kept.
  void emptyCache(c10::MempoolId_t) override {}
  // One in-order queue per device: a buffer is never reused across queues.
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return device_stats(device);
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    runtime::memory_stats(device).reset_accumulated();
  }
  void resetPeakStats(c10::DeviceIndex device) override { runtime::memory_stats(device).reset_peak(); }

  // Device memory is never host-addressable: a copy between two tpu
  // storages is a device operation (csrc/aten/copy.cc), never a memcpy.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    TORCH_CHECK(false, "tpu storages cannot be copied as host memory");
  }
};

TpuAllocator g_allocator;

}  // namespace

c10::Allocator* tpu_allocator() { return &g_allocator; }

runtime::StorageValue& storage_value(const c10::StorageImpl& storage) {
  TORCH_CHECK(storage.device_type() == c10::DeviceType::PrivateUse1,
              "expected a tpu storage, got one on ", storage.device());
  auto* value = static_cast<runtime::StorageValue*>(storage.data_ptr().get_context());
  TORCH_CHECK(value != nullptr, "tpu storage without a device value (not made by the tpu allocator)");
  return *value;
}

runtime::StorageValue& storage_value(const c10::Storage& storage) {
  return storage_value(*storage.unsafeGetStorageImpl());
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator)

}  // namespace torch_tpu::aten
