// Device times for PyTorch's profiler: the PrivateUse1 profiler stubs, which
// torch.autograd.profiler.profile(use_device="tpu") calls around every op.
//
// A stub event is a marker on the device's busy clock (runtime/
// device_time.h): the time between an op's start and end markers is the
// device time of the programs and transfers the op launched, and zero for
// an op that launched none (a view, or any op recorded in fused eager, whose
// time goes to the op that materializes the graph). Recording a marker never
// blocks; reading one (elapsed) waits for the work launched before it.
#include <torch/csrc/profiler/stubs/base.h>

#include <c10/util/ApproximateClock.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <thread>

#include "aten/device_guard.h"
#include "runtime/device_queue.h"
#include "runtime/device_time.h"

namespace torch_tpu::aten {

namespace {

using torch::profiler::impl::ProfilerVoidEventStub;

struct Marker {
  c10::DeviceIndex device = -1;  // -1: recorded before the runtime existed
  std::shared_ptr<runtime::DeviceTimeMarker> time;
};

// Busy nanoseconds at the marker, once the work before it has completed.
// Completion callbacks fire for failed work too, so this waits without
// synchronizing: a failure stays for the program's next sync point to raise.
int64_t resolve(const Marker& marker) {
  if (marker.device < 0) return 0;
  int64_t ns;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  while ((ns = marker.time->busy_ns.load()) < 0) {
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
      marker->time = runtime::mark_device_time(marker->device);
    }
    if (device) *device = std::max<c10::DeviceIndex>(marker->device, 0);
    if (cpu_ns) *cpu_ns = c10::getTime();
    *event = std::move(marker);
  }

  // Microseconds, as the CUDA stubs report.
  float elapsed(const ProfilerVoidEventStub* start,
                const ProfilerVoidEventStub* end) const override {
    const auto& a = *static_cast<const Marker*>(start->get());
    const auto& b = *static_cast<const Marker*>(end->get());
    if (a.device != b.device) return 0.0f;
    const int64_t ns = resolve(b) - resolve(a);
    return ns > 0 ? static_cast<float>(ns) / 1000.0f : 0.0f;
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
