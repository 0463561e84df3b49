#include "runtime/device_queue.h"

#include <algorithm>
#include <exception>
#include <mutex>
#include <vector>

#include "runtime/buffer_release.h"
#include "runtime/device_buffer.h"
#include "runtime/device_time.h"

namespace torch_tpu::runtime {

namespace {

struct Queue {
  std::mutex mutex;
  std::vector<pjrt::Event> pending;
  size_t prune_at = 64;  // grows with the backlog so pruning stays amortized O(1)
};

Queue& queue(int device) {
  static Queue queues[kMaxDevices];
  (void)memory_stats(device);  // validates the index
  return queues[device];
}

// Drops events that already fired, so the list stays short in a long loop.
// A failure of pruned work is not lost: its output buffers carry the error
// and the next read of them raises it.
void prune(Queue& q) {
  if (q.pending.size() < q.prune_at) return;
  std::vector<pjrt::Event> still;
  for (auto& e : q.pending) {
    if (!e.is_ready()) still.push_back(std::move(e));
  }
  q.pending.swap(still);
  q.prune_at = std::max<size_t>(64, 2 * q.pending.size());
}

}  // namespace

void track_completion(int device, pjrt::Event done, int64_t launch_ns, const LaunchLabel& label) {
  if (!done.valid()) return;
  time_launch(device, done, launch_ns, label);
  Queue& q = queue(device);
  std::lock_guard<std::mutex> lock(q.mutex);
  prune(q);
  q.pending.push_back(std::move(done));
}

void synchronize(int device) {
  Queue& q = queue(device);
  std::vector<pjrt::Event> pending;
  {
    std::lock_guard<std::mutex> lock(q.mutex);
    pending.swap(q.pending);
  }
  // Every event is waited for before the first failure is raised: work
  // launched after a failed program still runs, and a caller that goes on
  // (or exits) after the error must not find it running.
  std::exception_ptr first_failure;
  for (auto& e : pending) {
    try {
      e.await();
    } catch (...) {
      if (!first_failure) first_failure = std::current_exception();
    }
  }
  // Nothing launched holds the device's dropped buffers now: the plugin
  // gets their memory back before this returns.
  release_queued_now(device);
  if (first_failure) std::rethrow_exception(first_failure);
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
