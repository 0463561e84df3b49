#include "runtime/device_time.h"

#include <algorithm>
#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/device_buffer.h"

namespace torch_tpu::runtime {

namespace {

std::atomic<bool> g_enabled{false};

// The launch sink, and the launches labelled for it whose span it has not
// received yet.
std::mutex g_sink_mutex;
std::shared_ptr<const LaunchSink> g_sink;
std::atomic<int64_t> g_sink_pending{0};

std::shared_ptr<const LaunchSink> current_sink() {
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  return g_sink;
}

// A launch's label while it runs, when a sink wants its span.
struct PendingSpan {
  std::string name;
  uint64_t correlation = 0;
  SpanKind kind = SpanKind::kProgram;
};

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

// Records launch `seq` as completed and resolves the markers waiting for
// every launch up to it. Caller holds c.mutex.
void resolve_markers(BusyClock& c, int64_t seq) {
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

// `launch_ns` < 0: the launch's callback could not be registered; it counts
// as completed without busy time. `label`: set when a sink wants the
// launch's span (reported once the clock's lock is released).
void complete_launch(int device, int64_t seq, int64_t launch_ns, std::unique_ptr<PendingSpan> label = nullptr) {
  LaunchSpan span;
  {
    BusyClock& c = clock_of(device);
    std::lock_guard<std::mutex> lock(c.mutex);
    if (launch_ns >= 0) {
      const int64_t now = steady_now_ns();
      span.device = device;
      span.start_ns = std::max(launch_ns, c.last_completion_ns);
      span.end_ns = now;
      c.busy_ns += std::max<int64_t>(0, now - span.start_ns);
      c.last_completion_ns = std::max(c.last_completion_ns, now);
    }
    resolve_markers(c, seq);
  }
  if (!label) return;
  if (launch_ns >= 0) {
    if (auto sink = current_sink()) {
      span.name = std::move(label->name);
      span.correlation = label->correlation;
      span.kind = label->kind;
      try {
        (*sink)(std::move(span));
      } catch (...) {
        // A profiler's failure must not reach the plugin's thread.
      }
    }
  }
  --g_sink_pending;
}

}  // namespace

int64_t steady_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void enable_device_time() { g_enabled = true; }

bool device_time_enabled() { return g_enabled.load(std::memory_order_relaxed); }

void time_launch(int device, const pjrt::Event& done, int64_t launch_ns, const LaunchLabel& label) {
  if (!device_time_enabled() || !done.valid()) return;
  std::unique_ptr<PendingSpan> pending;
  if (current_sink()) {
    pending = std::make_unique<PendingSpan>();
    pending->name = label.name ? label.name : "tpu launch";
    pending->correlation = label.correlation;
    pending->kind = label.kind;
    ++g_sink_pending;
  }
  BusyClock& c = clock_of(device);
  int64_t seq;
  {
    std::lock_guard<std::mutex> lock(c.mutex);
    seq = ++c.launched;
  }
  if (launch_ns < 0) launch_ns = steady_now_ns();
  // on_ready takes a copyable callback: the label travels as a shared
  // pointer and is moved out once.
  auto shared = std::make_shared<std::unique_ptr<PendingSpan>>(std::move(pending));
  try {
    done.on_ready([device, seq, launch_ns, shared](std::optional<pjrt::PjrtError>) {
      complete_launch(device, seq, launch_ns, std::move(*shared));
    });
  } catch (...) {
    // Profiling must not fail the launch: the launch goes untimed, and
    // markers do not wait for it.
    complete_launch(device, seq, -1, std::move(*shared));
  }
}

void set_launch_sink(LaunchSink sink) {
  if (sink) enable_device_time();
  std::lock_guard<std::mutex> lock(g_sink_mutex);
  g_sink = sink ? std::make_shared<const LaunchSink>(std::move(sink)) : nullptr;
}

bool launch_sink_set() { return current_sink() != nullptr; }

void report_span(LaunchSpan span) {
  if (auto sink = current_sink()) (*sink)(std::move(span));
}

void flush_launch_sink() {
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while (g_sink_pending.load() > 0 && std::chrono::steady_clock::now() < give_up) {
    std::this_thread::sleep_for(std::chrono::microseconds(100));
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
