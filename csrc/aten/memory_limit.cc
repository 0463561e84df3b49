#include "aten/memory_limit.h"

#include <atomic>
#include <cstdio>
#include <string>

#include "aten/allocator.h"
#include "common/element_type.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

namespace {

// Per device: the cap in bytes (0: none set) and the fraction it came from.
// Read on every launch, so the common case is one relaxed load.
std::atomic<int64_t> limit_bytes[runtime::kMaxDevices];
std::atomic<double> fractions[runtime::kMaxDevices];

void check_within_limit(int device, int64_t bytes, const std::string& what) {
  const int64_t limit = limit_bytes[device].load(std::memory_order_relaxed);
  if (limit == 0 || bytes <= 0) return;
  const int64_t allocated = runtime::memory_stats(device).allocated.load(std::memory_order_relaxed);
  if (allocated + bytes <= limit) return;
  char fraction[32];
  std::snprintf(fraction, sizeof fraction, "%g", fractions[device].load(std::memory_order_relaxed));
  throw MemoryLimitError(
      {__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
      note_out_of_memory(static_cast<c10::DeviceIndex>(device), static_cast<double>(bytes), what,
                         "tpu:" + std::to_string(device) + " is limited to " + format_bytes(static_cast<double>(limit)) +
                             " for this process (set_per_process_memory_fraction(" + fraction + ")), of which " +
                             format_bytes(static_cast<double>(allocated)) + " is allocated."));
}

}  // namespace

void set_memory_fraction(int device, double fraction) {
  TORCH_CHECK_VALUE(fraction >= 0.0 && fraction <= 1.0, "Invalid fraction value: ", fraction,
                    ". Allowed range: 0~1");
  const size_t total = device_capacity(static_cast<c10::DeviceIndex>(device));
  TORCH_CHECK(total != 0, "set_per_process_memory_fraction: the tpu plugin does not report the memory size of tpu:",
              device, ", so no fraction of it can be set");
  // A fraction of 0 allows nothing, which the cap's 0 ("none") cannot say.
  const auto bytes = static_cast<int64_t>(fraction * static_cast<double>(total));
  fractions[device].store(fraction, std::memory_order_relaxed);
  limit_bytes[device].store(bytes > 0 ? bytes : 1, std::memory_order_relaxed);
}

double memory_fraction(int device) {
  return limit_bytes[device].load(std::memory_order_relaxed) == 0 ? 1.0
                                                                   : fractions[device].load(std::memory_order_relaxed);
}

void check_launch_within_limit(int device, const pjrt::LoadedExecutable& program, bool donates, const char* op) {
  if (limit_bytes[device].load(std::memory_order_relaxed) == 0) return;
  int64_t bytes = 0;
  if (const auto& memory = program.execution_memory()) {
    bytes = memory->outputs - (donates ? memory->aliased : 0);
  } else {
    // The plugin does not say: every result is new memory.
    for (const pjrt::OutputSpec& output : program.outputs()) {
      int64_t n = static_cast<int64_t>(element_size(output.type));
      for (int64_t d : output.dims) n *= d;
      bytes += n;
    }
  }
  check_within_limit(device, bytes, std::string("the results of ") + op);
}

void check_transfer_within_limit(int device, int64_t bytes, const char* what) {
  if (limit_bytes[device].load(std::memory_order_relaxed) == 0) return;
  check_within_limit(device, bytes, what);
}

}  // namespace torch_tpu::aten
