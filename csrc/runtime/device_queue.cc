#include "runtime/device_queue.h"

#include <mutex>
#include <vector>

#include "runtime/device_buffer.h"

namespace torch_tpu::runtime {

namespace {

struct Queue {
  std::mutex mutex;
  std::vector<pjrt::Event> pending;
};

Queue& queue(int device) {
  static Queue queues[kMaxDevices];
  (void)memory_stats(device);  // validates the index
  return queues[device];
}

// Drops events that already fired, so the list stays short in a long loop.
// A failure of pruned work is not lost: its output buffers carry the error
// and the next read of them raises it.
void prune(std::vector<pjrt::Event>& pending) {
  if (pending.size() < 64) return;
  std::vector<pjrt::Event> still;
  for (auto& e : pending) {
    if (!e.is_ready()) still.push_back(std::move(e));
  }
  pending.swap(still);
}

}  // namespace

void track_completion(int device, pjrt::Event done) {
  if (!done.valid()) return;
  Queue& q = queue(device);
  std::lock_guard<std::mutex> lock(q.mutex);
  prune(q.pending);
  q.pending.push_back(std::move(done));
}

void synchronize(int device) {
  Queue& q = queue(device);
  std::vector<pjrt::Event> pending;
  {
    std::lock_guard<std::mutex> lock(q.mutex);
    pending.swap(q.pending);
  }
  for (auto& e : pending) e.await();
}

bool is_idle(int device) {
  Queue& q = queue(device);
  std::lock_guard<std::mutex> lock(q.mutex);
  for (auto& e : q.pending) {
    if (!e.is_ready()) return false;
  }
  return true;
}

}  // namespace torch_tpu::runtime
