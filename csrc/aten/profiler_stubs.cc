// Device times for PyTorch's profiler: the PrivateUse1 profiler stubs, which
// torch.autograd.profiler.profile(use_device="tpu") calls around every op.
//
// A stub event is a marker on the device's busy clock (runtime/
// device_time.h): the time between an op's start and end markers is the
// device time of the programs and transfers the op launched, on whichever
// devices (the tensors' device, not only the current one), and zero for
// an op that launched none (a view, or any op recorded in fused eager, whose
// time goes to the op that materializes the graph). Recording a marker never
// blocks; reading one (elapsed) waits for the work launched before it.
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>
#include <vector>

#include "aten/device_guard.h"
#include "runtime/device_queue.h"
#include "runtime/device_time.h"

namespace torch_tpu::aten {

namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

// A marker per device: an op runs on its tensors' device, which need not
// be the current one.
struct Marker {
  c10::DeviceIndex device = 0;  // the current device, which the event reports
  std::vector<std::shared_ptr<runtime::DeviceTimeMarker>> times;  // empty before the runtime existed
};

// Busy nanoseconds at the marker, once the work before it has completed.
// Completion callbacks fire for failed work too, so this waits without
// synchronizing: a failure stays for the program's next sync point to raise.
int64_t resolve(const runtime::DeviceTimeMarker& marker) {
  int64_t ns;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while ((ns = marker.busy_ns.load()) < 0) {
    TORCH_CHECK(std::chrono::steady_clock::now() < give_up,
                "tpu profiler: the device's work did not complete in 10 minutes");
    std::this_thread::sleep_for(std::chrono::microseconds(50));
  }
  return ns;
}

struct TpuProfilerStubs final : torch::profiler::impl::ProfilerStubs {
  void record(c10::DeviceIndex* device, ProfilerVoidEventStub* event,
              int64_t* cpu_ns) const override {
    auto marker = std::make_shared<Marker>();
    // No device work can exist before the runtime does.
    if (runtime_device_count() > 0) {
      runtime::enable_device_time();
      marker->device = current_device_index();
      for (c10::DeviceIndex i = 0; i < runtime_device_count(); ++i) {
        marker->times.push_back(runtime::mark_device_time(i));
      }
    }
    if (device) *device = marker->device;
    if (cpu_ns) *cpu_ns = c10::getTime();
    *event = std::move(marker);
  }

  // Microseconds, as the CUDA stubs report: the busy time between the two
  // markers summed over the devices.
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    const auto& a = *static_cast<const Marker*>(start->get());
    const auto& b = *static_cast<const Marker*>(end->get());
    int64_t ns = 0;
    for (size_t i = 0; i < std::min(a.times.size(), b.times.size()); ++i) {
      ns += std::max<int64_t>(resolve(*b.times[i]) - resolve(*a.times[i]), 0);
    }
    return static_cast<float>(ns) / 1000.0f;
  }

  void mark(const char*) const override {}
  void rangePush(const char*) const override {}
  void rangePop() const override {}
  bool enabled() const override { return true; }

  void onEachDevice(std::function<void(int)> op) const override {
    for (c10::DeviceIndex i = 0; i < runtime_device_count(); ++i) op(i);
  }

  void synchronize() const override {
    for (c10::DeviceIndex i = 0; i < runtime_device_count(); ++i) {
      runtime::synchronize(i);
    }
  }
};

struct RegisterStubs {
  RegisterStubs() {
    static TpuProfilerStubs stubs;
    torch::profiler::impl::registerPrivateUse1Methods(&stubs);
  }
};
RegisterStubs register_stubs;

}  // namespace

}  // namespace torch_tpu::aten
