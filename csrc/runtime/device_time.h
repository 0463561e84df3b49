// Device busy time, for the profiler's device timestamps
// (aten/profiler_stubs.cc).
//
// Once enabled, every launch tracked by the device queue is timed: its work
// is taken to run from its launch (or the previous completion, if later)
// to its completion. The device's busy clock is the sum of those spans. A
// marker reads the busy clock once every launch before it has completed
// (launches are numbered; completions out of order are held back until the
// ones before them arrive), so the difference of two markers is the device
// time of the work launched between them: zero for an op that launched
// nothing, whatever the device was doing meanwhile.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "pjrt/event.h"

namespace torch_tpu::runtime {

// Starts timing launches (cannot be undone: a marker must see every launch
// after it). Costs one completion callback per launch.
void enable_device_time();
bool device_time_enabled();

// Steady-clock nanoseconds, the busy clock's time base.
int64_t steady_now_ns();

// What device work is, in a trace.
enum class SpanKind : uint8_t { kProgram, kHostToDevice, kDeviceToHost };

// What a launch was, for trace profiles: the op that launched it (copied
// during the launch call when a sink is set), the profiler's correlation id
// of the host-side op it belongs to (0: none), and its kind.
struct LaunchLabel {
  const char* name = nullptr;
  uint64_t correlation = 0;
  SpanKind kind = SpanKind::kProgram;
};

// Called by the device queue for each launch with its completion event and
// the time the launch began (-1: now).
void time_launch(int device, const pjrt::Event& done, int64_t launch_ns, const LaunchLabel& label = {});

// One launch's span on the device, on the busy clock's time base: from its
// launch (or the completion before it, when later) to its completion.
struct LaunchSpan {
  int device = 0;
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  std::string name;
  uint64_t correlation = 0;
  SpanKind kind = SpanKind::kProgram;
};

// Receives every launch's span at its completion (from the plugin's
// threads) while set; null stops. Setting one enables device time.
using LaunchSink = std::function<void(LaunchSpan)>;
void set_launch_sink(LaunchSink sink);
// Waits until every launch timed while a sink was set has reached it.
void flush_launch_sink();
bool launch_sink_set();
// Hands a span its caller measured (a transfer the host waits for) to the
// sink, when one is set.
void report_span(LaunchSpan span);

struct DeviceTimeMarker {
  // Busy nanoseconds when the work launched before the marker completed;
  // -1 until then.
  std::atomic<int64_t> busy_ns{-1};
};
std::shared_ptr<DeviceTimeMarker> mark_device_time(int device);

}  // namespace torch_tpu::runtime
