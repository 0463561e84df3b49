#include "aten/allocator.h"

#include <ATen/core/Tensor.h>
#include <c10/core/CachingDeviceAllocator.h>
#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>
#include <torch/library.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <string>
#include <mutex>
#include <unordered_map>

#include "aten/device_graph.h"
#include "aten/device_guard.h"
#include "aten/memory_history.h"
#include "runtime/buffer_release.h"
#include "runtime/current_device.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

namespace {

// Every live storage value by its pseudo-address. A storage that PyTorch
// wraps around a tpu data pointer with at::from_blob (the legacy
// serializer behind pickle does) has no context of its own; it is
// resolved here to the storage that owns the address.
class LiveValues {
 public:
  void add(runtime::StorageValue* value) {
    std::lock_guard<std::mutex> lock(mutex_);
    values_.emplace(value->address(), value);
  }
  void remove(runtime::StorageValue* value) {
    std::lock_guard<std::mutex> lock(mutex_);
    values_.erase(value->address());
  }
  runtime::StorageValue* find(uintptr_t address) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = values_.find(address);
    return it == values_.end() ? nullptr : it->second;
  }

 private:
  std::mutex mutex_;
  ska::flat_hash_map<uintptr_t, runtime::StorageValue*> values_;  // no node per tensor
};

LiveValues& live_values() {
  static auto* values = new LiveValues();  // outlives static destruction
  return *values;
}

void delete_storage_value(void* context) {
  auto* value = static_cast<runtime::StorageValue*>(context);
  live_values().remove(value);
  delete value;
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
  count.peak = s.peak_buffers.load();
  count.allocated = s.num_allocs.load();
  count.freed = s.num_frees.load();
  for (auto* array : {&out.allocated_bytes, &out.reserved_bytes, &out.active_bytes, &out.requested_bytes}) {
    (*array)[aggregate] = bytes;
  }
  out.allocation[aggregate] = count;
  out.segment[aggregate] = count;
  out.active[aggregate] = count;
  out.num_device_alloc = s.num_allocs.load();
  out.num_device_free = s.num_frees.load();
  out.num_ooms = s.num_ooms.load();
  return out;
}

bool on_host_platform() { return runtime::Runtime::get().client().platform_name() == "cpu"; }

// The host memory the kernel can still hand out (MemAvailable), 0 when
// unknown. On the CPU platform that is the device memory left: other
// processes and host tensors take from the same pool.
int64_t host_available_bytes() {
  std::FILE* meminfo = std::fopen("/proc/meminfo", "r");
  if (!meminfo) return 0;
  char line[256];
  long long kib = 0;
  while (std::fgets(line, sizeof line, meminfo)) {
    if (std::sscanf(line, "MemAvailable: %lld kB", &kib) == 1) break;
  }
  std::fclose(meminfo);
  return static_cast<int64_t>(kib) * 1024;
}

// (free, total) bytes of a device: the plugin's limit and use when it
// reports them; on the CPU platform the host's physical memory is the
// device's, and what the host has available bounds the free part; total 0
// when the platform says nothing.
std::pair<size_t, size_t> memory_info(c10::DeviceIndex device) {
  auto& client = runtime::Runtime::get().client();
  const auto stats = client.memory_stats(device);
  int64_t total = stats && stats->bytes_limit ? *stats->bytes_limit : 0;
  if (total == 0 && on_host_platform()) {
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages > 0 && page > 0) total = static_cast<int64_t>(pages) * page;
  }
  const int64_t used = stats ? stats->bytes_in_use : runtime::memory_stats(device).allocated.load();
  int64_t free = std::max<int64_t>(total - used, 0);
  if (on_host_platform()) {
    if (const int64_t available = host_available_bytes(); available > 0) free = std::min(free, available);
  }
  return {static_cast<size_t>(free), static_cast<size_t>(total)};
}

class TpuAllocator final : public c10::DeviceAllocator {
  static c10::DeviceIndex valid_index(c10::DeviceIndex device) {
    device = resolve_device_index(device);
    check_device_index(device);
    return device;
  }

 public:
  c10::DataPtr allocate(size_t nbytes) override {
    auto device = static_cast<c10::DeviceIndex>(runtime::current_device());
    // Device memory is taken when a value is written, asynchronously; a
    // storage larger than the whole device can never be written, so it is
    // refused here, as CUDA refuses it at allocation (torch.empty(10**13)
    // succeeded and failed later, at a read far from its cause).
    check_fits_device(device, static_cast<double>(nbytes), "a tensor");
    uintptr_t address = runtime::reserve_address(nbytes);
    auto* value = new runtime::StorageValue(device, nbytes, address);
    live_values().add(value);
    return c10::DataPtr(reinterpret_cast<void*>(address), value, &delete_storage_value,
                        c10::Device(c10::DeviceType::PrivateUse1, device));
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  bool initialized() override { return runtime::Runtime::is_initialized(); }
  // No free buffers are kept for reuse; what torch_tpu holds are buffers
  // dropped but not yet destroyed (runtime/buffer_release.h). Destroying
  // them here may wait for programs that still use them.
  void emptyCache(c10::MempoolId_t) override { release_dropped_buffers(); }
  // One in-order queue per device: a buffer is never reused across queues.
  void recordStream(const c10::DataPtr&, c10::Stream) override {}
  // torch.accelerator's memory queries: a device that does not exist is
  // refused as CUDA refuses it ("invalid device ordinal").
  c10::CachingDeviceAllocator::DeviceStats getDeviceStats(c10::DeviceIndex device) override {
    return device_stats(valid_index(device));
  }
  void resetAccumulatedStats(c10::DeviceIndex device) override {
    runtime::memory_stats(valid_index(device)).reset_accumulated();
  }
  void resetPeakStats(c10::DeviceIndex device) override { runtime::memory_stats(valid_index(device)).reset_peak(); }
  std::pair<size_t, size_t> getMemoryInfo(c10::DeviceIndex device) override {
    return memory_info(valid_index(device));
  }

  // Device memory is never host-addressable: a copy between two tpu
  // storages is a device operation (csrc/aten/copy.cc), never a memcpy.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    TORCH_CHECK(false, "tpu storages cannot be copied as host memory");
  }
};

TpuAllocator g_allocator;

}  // namespace

c10::Allocator* tpu_allocator() { return &g_allocator; }

void release_dropped_buffers() {
  if (!runtime::Runtime::is_initialized()) return;
  for (c10::DeviceIndex device = 0; device < runtime_device_count(); ++device) {
    runtime::release_queued_now(device);
  }
}

size_t device_capacity(c10::DeviceIndex device) {
  static std::mutex mutex;
  static std::unordered_map<c10::DeviceIndex, size_t> capacity;
  std::lock_guard<std::mutex> lock(mutex);
  auto it = capacity.find(device);
  if (it == capacity.end()) it = capacity.emplace(device, memory_info(device).second).first;
  return it->second;
}

void check_fits_device(c10::DeviceIndex device, double nbytes, const std::string& what) {
  if (nbytes <= static_cast<double>(size_t{1} << 30)) return;  // no device is smaller
  const size_t capacity = device_capacity(device);
  std::string limit;
  if (capacity != 0 && nbytes > static_cast<double>(capacity)) {
    limit = " has a total capacity of " + format_bytes(static_cast<double>(capacity));
  } else if (on_host_platform()) {
    // Host memory: writing more than is available gets the process killed
    // by the kernel, with no Python error to say why.
    int64_t available = host_available_bytes();
    if (available > 0 && nbytes > static_cast<double>(available)) {
      // Dropped buffers waiting for their release are host memory too.
      release_dropped_buffers();
      available = host_available_bytes();
    }
    if (available > 0 && nbytes > static_cast<double>(available)) {
      limit = " (the CPU plugin's memory is the host's) has " + format_bytes(static_cast<double>(available)) + " available";
    }
  }
  if (limit.empty()) return;
  throw c10::OutOfMemoryError({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                              note_out_of_memory(device, nbytes, what, "tpu:" + std::to_string(device) + limit + "."));
}

std::string format_bytes(double bytes) {
  // CUDA's allocator's units: bytes up to 1 KiB, then KiB, MiB, GiB.
  const char* units[] = {"bytes", "KiB", "MiB", "GiB"};
  int unit = 0;
  while (unit < 3 && bytes >= 1024.0) {
    bytes /= 1024.0;
    ++unit;
  }
  char text[48];
  if (unit == 0) {
    std::snprintf(text, sizeof text, "%.0f bytes", bytes);
  } else {
    std::snprintf(text, sizeof text, "%.2f %s", bytes, units[unit]);
  }
  return text;
}

std::string note_out_of_memory(c10::DeviceIndex device, double nbytes, const std::string& what,
                               const std::string& why) {
  runtime::memory_stats(device).num_ooms.fetch_add(1, std::memory_order_relaxed);
  memory_history::on_out_of_memory(device, static_cast<int64_t>(nbytes),
                                   static_cast<int64_t>(memory_info(device).first));
  return "tpu out of memory. Tried to allocate " + format_bytes(nbytes) + " for " + what + ". " + why;
}

void set_storage_value(const c10::Storage& storage, runtime::DeviceBufferPtr value) {
  note_graph_write(storage, value);
  storage_value(storage).set_value(std::move(value));
}

runtime::StorageValue& storage_value(const c10::StorageImpl& storage) {
  TORCH_CHECK(storage.device_type() == c10::DeviceType::PrivateUse1,
              "expected a tpu storage, got one on ", storage.device());
  const c10::DataPtr& data = storage.data_ptr();
  if (data.get_deleter() == &delete_storage_value) return *static_cast<runtime::StorageValue*>(data.get_context());
  // A storage wrapped around a tpu pointer (at::from_blob, a slice of an
  // UntypedStorage): its context, if any, is not ours. It stands for the
  // live storage it covers exactly; a part of one would need offsets that
  // storage-level code does not carry.
  runtime::StorageValue* value = live_values().find(reinterpret_cast<uintptr_t>(data.get()));
  TORCH_CHECK(value != nullptr && storage.nbytes() == value->nbytes(),
              "a tpu storage wrapped around a device pointer must cover a whole live tpu storage "
              "(a part of one, such as an UntypedStorage slice, is not supported)");
  return *value;
}

runtime::StorageValue& storage_value(const c10::Storage& storage) {
  return storage_value(*storage.unsafeGetStorageImpl());
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator)

namespace {

// Tensor.record_stream(s): CUDA code calls it so the caching allocator does
// not reuse a buffer before work on another stream finishes. A tpu device
// has one in-order queue and buffers are never reused across queues, so
// there is nothing to record.
void record_stream(at::Tensor&, c10::Stream) {}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) { m.impl("record_stream", record_stream); }

}  // namespace torch_tpu::aten
