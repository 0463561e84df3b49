#include "runtime/device_time.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <utility>
#include <vector>

#include "runtime/device_buffer.h"

namespace torch_tpu::runtime {

namespace {

std::atomic<bool> g_enabled{false};

struct BusyClock {
  std::mutex mutex;
  int64_t launched = 0;  // sequence number of the last launch
  // Every launch up to this one has completed; later ones that completed
  // out of order wait in `completed_later`.
  int64_t completed_prefix = 0;
  std::set<int64_t> completed_later;
  int64_t busy_ns = 0;
  int64_t last_completion_ns = 0;
  // Markers waiting for the launches up to their sequence number.
  std::vector<std::pair<int64_t, std::shared_ptr<DeviceTimeMarker>>> waiting;
};

// Never destroyed: completion callbacks may still arrive during exit.
BusyClock& clock_of(int device) {
  static auto* clocks = new BusyClock[kMaxDevices];
  return clocks[device];
}

// `launch_ns` < 0: the launch's callback could not be registered; it counts
// as completed without busy time.
void complete_launch(int device, int64_t seq, int64_t launch_ns) {
  BusyClock& c = clock_of(device);
  std::lock_guard<std::mutex> lock(c.mutex);
  if (launch_ns >= 0) {
    const int64_t now = steady_now_ns();
    c.busy_ns += std::max<int64_t>(0, now - std::max(launch_ns, c.last_completion_ns));
    c.last_completion_ns = std::max(c.last_completion_ns, now);
  }
  c.completed_later.insert(seq);
  while (!c.completed_later.empty() && *c.completed_later.begin() == c.completed_prefix + 1) {
    c.completed_later.erase(c.completed_later.begin());
    ++c.completed_prefix;
  }
  auto resolved = std::remove_if(
      c.waiting.begin(), c.waiting.end(), [&c](const auto& entry) {
        if (entry.first > c.completed_prefix) return false;
        entry.second->busy_ns = c.busy_ns;
        return true;
      });
  c.waiting.erase(resolved, c.waiting.end());
}

}  // namespace

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void enable_device_time() { g_enabled = true; }

bool device_time_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void time_launch(int device, const pjrt::Event& done, int64_t launch_ns) {
  if (!device_time_enabled() || !done.valid()) return;
  BusyClock& c = clock_of(device);
  int64_t seq;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    seq = ++c.launched;
  }
  if (launch_ns < 0) launch_ns = steady_now_ns();
  try {
    done.on_ready([device, seq, launch_ns](std::optional<pjrt::PjrtError>) {
      complete_launch(device, seq, launch_ns);
    });
  } catch (...) {
    // Profiling must not fail the launch: the launch goes untimed, and
    // markers do not wait for it.
    complete_launch(device, seq, -1);
  }
}

std::shared_ptr<DeviceTimeMarker> mark_device_time(int device) {
  BusyClock& c = clock_of(device);
  auto marker = std::make_shared<DeviceTimeMarker>();
  std::lock_guard<std::mutex> lock(c.mutex);
  if (c.completed_prefix >= c.launched) {
    marker->busy_ns = c.busy_ns;
  } else {
    c.waiting.emplace_back(c.launched, marker);
  }
  return marker;
}

}  // namespace torch_tpu::runtime
