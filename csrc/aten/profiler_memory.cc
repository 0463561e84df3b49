// Every counted device buffer, as it is made and as it goes, is told to
// PyTorch's profiler (profile_memory=True) as an allocation, and later a
// free, of tpu memory, as CUDA's caching allocator reports its blocks (the
// profiler's tables then get device memory columns, and its memory
// timeline the device), and to the memory history
// (torch.tpu.memory._record_memory_history).
#include <c10/core/Allocator.h>
#include <c10/core/Device.h>

#include <cstdint>

#include "aten/memory_history.h"
#include "runtime/device_buffer.h"
#include "runtime/storage_value.h"

namespace torch_tpu::aten {

namespace {

void report_to_profiler(const void* id, int64_t bytes, int64_t allocated, int device) {
  if (!c10::memoryProfilingEnabled()) return;
  // PJRT owns the memory: nothing is reserved beyond what is allocated.
  const auto total = static_cast<size_t>(allocated);
  c10::reportMemoryUsageToProfiler(const_cast<void*>(id), bytes, total, total,
                                   c10::Device(c10::DeviceType::PrivateUse1, static_cast<c10::DeviceIndex>(device)));
}

void observe_buffer(const void* id, int64_t bytes, int64_t allocated, int device) {
  report_to_profiler(id, bytes, allocated, device);
  memory_history::on_buffer(id, bytes, device);
}

struct RegisterObserver {
  RegisterObserver() {
    runtime::set_memory_observer(&observe_buffer);
    runtime::set_pending_observer(&memory_history::on_pending);
    runtime::ValuesLock::set_release_observer(&memory_history::on_values_lock_released);
  }
};
RegisterObserver register_observer;

}  // namespace

}  // namespace torch_tpu::aten
