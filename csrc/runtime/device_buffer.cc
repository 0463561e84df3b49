#include "runtime/device_buffer.h"

#include <stdexcept>
#include <string>

#include "runtime/buffer_release.h"

namespace torch_tpu::runtime {

void DeviceMemoryStats::add(int64_t bytes) {
  allocated_total.fetch_add(bytes, std::memory_order_relaxed);
  int64_t now = allocated.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  int64_t seen = peak.load(std::memory_order_relaxed);
  while (now > seen && !peak.compare_exchange_weak(seen, now, std::memory_order_relaxed)) {
  }
}

namespace {

std::atomic<MemoryObserver> memory_observer{nullptr};
std::atomic<PendingObserver> pending_observer{nullptr};

void observe_pending(const void* id, bool made) {
  if (PendingObserver observe = pending_observer.load(std::memory_order_relaxed)) observe(id, made);
}

// Counts a buffer of `bytes` into its device's statistics (`created`) or
// out of them, and tells the observer.
void count(const void* id, int device, int64_t bytes, bool created) {
  auto& stats = memory_stats(device);
  if (created) {
    stats.add(bytes);
    const int64_t live = stats.num_buffers.fetch_add(1, std::memory_order_relaxed) + 1;
    int64_t seen = stats.peak_buffers.load(std::memory_order_relaxed);
    while (live > seen && !stats.peak_buffers.compare_exchange_weak(seen, live, std::memory_order_relaxed)) {
    }
    stats.num_allocs.fetch_add(1, std::memory_order_relaxed);
  } else {
    stats.sub(bytes);
    stats.num_buffers.fetch_sub(1, std::memory_order_relaxed);
    stats.num_frees.fetch_add(1, std::memory_order_relaxed);
  }
  if (MemoryObserver observe = memory_observer.load(std::memory_order_relaxed)) {
    observe(id, created ? bytes : -bytes, stats.allocated.load(std::memory_order_relaxed), device);
  }
}

}  // namespace

void set_memory_observer(MemoryObserver observer) { memory_observer.store(observer); }
void set_pending_observer(PendingObserver observer) { pending_observer.store(observer); }

DeviceMemoryStats& memory_stats(int device) {
  static DeviceMemoryStats stats[kMaxDevices];
  if (device < 0 || device >= kMaxDevices) {
    throw std::out_of_range("device index " + std::to_string(device) + " is out of range");
  }
  return stats[device];
}

DeviceBuffer::DeviceBuffer(pjrt::Buffer buffer, hlo::TensorType type, int device, bool counted)
    : buffer_(std::move(buffer)), type_(std::move(type)), device_(device), counted_(counted) {
  // The logical size, not on_device_size(): asking the plugin costs a call
  // per buffer on the hot path, and padding is the plugin's business.
  bytes_ = type_.num_elements() * static_cast<int64_t>(element_size(type_.dtype));
  if (counted_) count(this, device_, bytes_, /*created=*/true);
}

DeviceBuffer::DeviceBuffer(hlo::TensorType type, int device, std::shared_ptr<PendingSource> source)
    : source_(std::move(source)), type_(std::move(type)), device_(device), counted_(false) {
  bytes_ = type_.num_elements() * static_cast<int64_t>(element_size(type_.dtype));
  ready_.store(false, std::memory_order_release);
  observe_pending(this, /*made=*/true);
}

void DeviceBuffer::fulfill(pjrt::Buffer buffer, uint64_t graph_run) {
  buffer_ = std::move(buffer);
  graph_run_ = graph_run;
  counted_ = true;
  count(this, device_, bytes_, /*created=*/true);
  ready_.store(true, std::memory_order_release);
  source_.reset();
}

void DeviceBuffer::materialize() const {
  // Keep the source alive across the call: fulfill() drops our reference.
  std::shared_ptr<PendingSource> source = source_;
  if (source) source->materialize();
  if (pending()) throw std::runtime_error("a pending tpu value was not produced by its graph");
}

DeviceBuffer::~DeviceBuffer() {
  if (counted_) {
    count(this, device_, bytes_, /*created=*/false);
  } else if (pending()) {
    observe_pending(this, /*made=*/false);
  }
  release_later(device_, std::move(buffer_));
}

}  // namespace torch_tpu::runtime
