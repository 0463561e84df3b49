// A device buffer as the runtime tracks it: the PJRT buffer plus its place
// in the per-device memory statistics. Storages, pending work and the
// caches share DeviceBuffers; the memory is freed when the last one goes.
//
// In fused eager mode a buffer can be pending: its value is an output of a
// deferred graph that has not run yet. Asking a pending buffer for its PJRT
// buffer runs that graph first (a materialization), so every reader outside
// the recorder (copies to host, collectives, strict programs) sees a real
// buffer without knowing about fusion.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "hlo/types.h"
#include "pjrt/buffer.h"

namespace torch_tpu::runtime {

// Bytes of live device buffers per device: what memory_allocated() reports.
struct DeviceMemoryStats {
  std::atomic<int64_t> allocated{0};
  std::atomic<int64_t> peak{0};
  std::atomic<int64_t> num_buffers{0};
  std::atomic<int64_t> peak_buffers{0};
  std::atomic<int64_t> num_allocs{0};  // cumulative
  std::atomic<int64_t> num_ooms{0};    // cumulative: out-of-memory errors raised
  std::atomic<int64_t> num_frees{0};   // cumulative
  std::atomic<int64_t> allocated_total{0};  // cumulative bytes
  std::atomic<int64_t> freed_total{0};      // cumulative bytes

  void add(int64_t bytes);
  void sub(int64_t bytes) {
    allocated.fetch_sub(bytes, std::memory_order_relaxed);
    freed_total.fetch_add(bytes, std::memory_order_relaxed);
  }
  void reset_peak() {
    peak.store(allocated.load());
    peak_buffers.store(num_buffers.load());
  }
  void reset_accumulated() {
    num_allocs.store(0);
    num_frees.store(0);
    num_ooms.store(0);
    allocated_total.store(0);
    freed_total.store(0);
  }
};

// Statistics of `device` (0 <= device < kMaxDevices).
DeviceMemoryStats& memory_stats(int device);
inline constexpr int kMaxDevices = 64;

// Told of every counted buffer as it is counted (`bytes` > 0) and as it goes
// (`bytes` < 0), with the device's allocated bytes after it; `id` tells the
// buffers apart. The ATen layer reports these to PyTorch's profiler
// (profile_memory=True). Set once, before buffers exist; null: none.
using MemoryObserver = void (*)(const void* id, int64_t bytes, int64_t allocated, int device);
void set_memory_observer(MemoryObserver observer);
// Told of every pending buffer as it is made (`made`) and, if it is never
// fulfilled, as it goes; a fulfilled one is then counted as above. The
// memory history uses it to give a fused op's result the stack of the op
// rather than that of the sync point that ran its graph.
using PendingObserver = void (*)(const void* id, bool made);
void set_pending_observer(PendingObserver observer);

// The deferred graph a pending buffer comes from.
class PendingSource {
 public:
  virtual ~PendingSource() = default;
  // Runs the graph and fulfills every pending buffer that is still alive.
  virtual void materialize() = 0;
};

class DeviceBuffer {
 public:
  // `counted`: whether the buffer shows in memory_stats (runtime-internal
  // caches such as scalar constants do not).
  DeviceBuffer(pjrt::Buffer buffer, hlo::TensorType type, int device, bool counted = true);
  // A pending value of `type` that `source` will produce; counted in the
  // memory statistics once fulfilled.
  DeviceBuffer(hlo::TensorType type, int device, std::shared_ptr<PendingSource> source);
  ~DeviceBuffer();
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  // Both materialize a pending buffer first.
  const pjrt::Buffer& buffer() const {
    if (pending()) materialize();
    return buffer_;
  }
  pjrt::c::Buffer* get() const { return buffer().get(); }
  bool pending() const { return !ready_.load(std::memory_order_acquire); }
  // The graph a pending buffer waits for (null once fulfilled).
  const std::shared_ptr<PendingSource>& source() const { return source_; }
  // Called by the source when the graph ran: the buffer takes its value.
  // `graph_run` numbers the run among all graphs' runs (from 1).
  void fulfill(pjrt::Buffer buffer, uint64_t graph_run);
  // The run of the fused graph that computed the buffer; 0 for a value
  // from anywhere else (a strict program, a transfer) or still pending.
  uint64_t graph_run() const { return graph_run_; }
  const hlo::TensorType& type() const { return type_; }
  int device() const { return device_; }
  int64_t bytes() const { return bytes_; }
  // True the first time it is asked: a failed computation's result reports
  // its failure at every read, and the statistics count it once.
  bool first_failure_report() const { return !failure_reported_.exchange(true); }

 private:
  void materialize() const;

  pjrt::Buffer buffer_;
  std::shared_ptr<PendingSource> source_;
  std::atomic<bool> ready_{true};
  mutable std::atomic<bool> failure_reported_{false};
  hlo::TensorType type_;
  int device_;
  int64_t bytes_;
  bool counted_;
  uint64_t graph_run_ = 0;
};

using DeviceBufferPtr = std::shared_ptr<DeviceBuffer>;

}  // namespace torch_tpu::runtime
