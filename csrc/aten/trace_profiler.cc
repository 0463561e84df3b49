// The Kineto activity profiler of trace_profiler.h.
//
// This file alone sees Kineto: PyTorch's wheels are built with it, and
// USE_KINETO switches on the registration header. It includes no other
// PyTorch header whose layout USE_KINETO could change. PyTorch 2.11 has no
// registration for a PrivateUse1 activity profiler: built against it, the
// profiler has no device rows (docs/profiling.md).
#if __has_include(<torch/csrc/profiler/standalone/privateuse1_profiler.h>)
#define TORCH_TPU_DEVICE_TRACE 1
#define USE_KINETO 1
#include <torch/csrc/profiler/standalone/privateuse1_profiler.h>

#include <libkineto.h>
#include <output_base.h>
#endif

#include <chrono>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "aten/trace_profiler.h"
#include "runtime/device_queue.h"
#include "runtime/device_time.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

#ifdef TORCH_TPU_DEVICE_TRACE
namespace {

// A strict op's program is named apart from its op ("tpu program:
// aten::mm"), as a CUDA kernel has a name of its own: key_averages() groups
// rows by name, and the op's host row and its program's device row would
// otherwise show as one op listed twice. Graphs ("tpu fused graph of ...")
// and copies are named for themselves already.
std::string activity_name(const runtime::LaunchSpan& span) {
  if (span.kind != runtime::SpanKind::kProgram || span.name.rfind("tpu ", 0) == 0) return span.name;
  return "tpu program: " + span.name;
}

// PyTorch pushes the correlation id of each op it records on the thread
// that runs it; the launches the op makes carry the innermost one.
thread_local std::vector<uint64_t> t_correlation_stack;
std::atomic<int> g_recording_sessions{0};

// CLOCK_REALTIME nanoseconds (what PyTorch's profiler stamps host events
// with) minus steady-clock nanoseconds (the busy clock's base), now.
int64_t realtime_minus_steady_ns() {
  const int64_t real = std::chrono::duration_cast<std::chrono::nanoseconds>(
                           std::chrono::system_clock::now().time_since_epoch())
                           .count();
  return real - runtime::steady_now_ns();
}

// Waits until no launched work is outstanding on any device, without
// consuming errors (they stay for the program's next sync point).
void wait_until_idle() {
  if (!runtime::Runtime::is_initialized()) return;
  const int devices = static_cast<int>(runtime::Runtime::get().client().devices().size());
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::minutes(10);
  for (int d = 0; d < devices; ++d) {
    while (!runtime::is_idle(d) && std::chrono::steady_clock::now() < give_up) {
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }
  runtime::flush_launch_sink();
}

class TpuTraceSession final : public libkineto::IActivityProfilerSession {
 public:
  ~TpuTraceSession() override {
    // A session dropped while recording (the profile never stopped) must
    // not leave the sink pointing at it.
    if (status_ == libkineto::TraceStatus::RECORDING) {
      runtime::set_launch_sink(nullptr);
      --g_recording_sessions;
    }
  }

  void start() override {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      spans_.clear();
    }
    clock_offset_ns_ = realtime_minus_steady_ns();
    start_ns_ = runtime::steady_now_ns();
    runtime::set_launch_sink([this](runtime::LaunchSpan span) {
      std::lock_guard<std::mutex> lock(mutex_);
      spans_.push_back(std::move(span));
    });
    ++g_recording_sessions;
    status_ = libkineto::TraceStatus::RECORDING;
  }

  void stop() override {
    // The work launched while recording has not necessarily finished:
    // its spans arrive at completion.
    wait_until_idle();
    runtime::set_launch_sink(nullptr);
    --g_recording_sessions;
    end_ns_ = runtime::steady_now_ns();
    status_ = libkineto::TraceStatus::PROCESSING;
  }

  std::vector<std::string> errors() override { return {}; }

  void processTrace(libkineto::ActivityLogger& logger) override {
    processTrace(logger, [](int32_t) -> const libkineto::ITraceActivity* { return nullptr; }, 0, 0);
  }

  void processTrace(libkineto::ActivityLogger& logger, libkineto::getLinkedActivityCallback linked_activity,
                    int64_t, int64_t) override {
    std::lock_guard<std::mutex> lock(mutex_);
    span_ = std::make_unique<libkineto::TraceSpan>(start_ns_ + clock_offset_ns_, end_ns_ + clock_offset_ns_,
                                                   "tpu");
    activities_.clear();
    // Device 0 is named by getDeviceInfo; the others the trace shows get
    // their process row named here.
    std::set<int64_t> named{0};
    for (const runtime::LaunchSpan& s : spans_) {
      if (!named.insert(s.device).second) continue;
      logger.handleDeviceInfo(libkineto::DeviceInfo{s.device, s.device, "tpu", "tpu " + std::to_string(s.device)},
                              start_ns_ + clock_offset_ns_);
      logger.handleResourceInfo(libkineto::ResourceInfo{s.device, 0, 0, "programs"}, start_ns_ + clock_offset_ns_);
    }
    for (const runtime::LaunchSpan& s : spans_) {
      const auto type = s.kind == runtime::SpanKind::kProgram ? libkineto::ActivityType::CONCURRENT_KERNEL
                                                              : libkineto::ActivityType::GPU_MEMCPY;
      auto a = std::make_unique<libkineto::GenericTraceActivity>(*span_, type, activity_name(s));
      a->startTime = s.start_ns + clock_offset_ns_;
      a->endTime = s.end_ns + clock_offset_ns_;
      a->id = static_cast<int32_t>(s.correlation);
      a->device = s.device;
      a->resource = 0;
      if (s.correlation != 0) {
        a->linked = linked_activity(static_cast<int32_t>(s.correlation));
        a->flow.id = static_cast<uint32_t>(s.correlation);
        a->flow.type = libkineto::kLinkAsyncCpuGpu;
        a->flow.start = false;
      }
      logger.handleGenericActivity(*a);
      activities_.push_back(std::move(a));
    }
  }

  std::unique_ptr<libkineto::DeviceInfo> getDeviceInfo() override {
    return std::make_unique<libkineto::DeviceInfo>(libkineto::DeviceInfo{0, 0, "tpu", "tpu 0"});
  }

  std::vector<libkineto::ResourceInfo> getResourceInfos() override {
    return {libkineto::ResourceInfo{0, 0, 0, "programs"}};
  }

  std::unique_ptr<libkineto::CpuTraceBuffer> getTraceBuffer() override {
    // The activities went to the logger in processTrace; the buffer only
    // says when the session ran.
    auto buffer = std::make_unique<libkineto::CpuTraceBuffer>();
    buffer->span = libkineto::TraceSpan(start_ns_ + clock_offset_ns_, end_ns_ + clock_offset_ns_, "tpu");
    return buffer;
  }

  void pushCorrelationId(uint64_t id) override { t_correlation_stack.push_back(id); }

  void popCorrelationId() override {
    if (!t_correlation_stack.empty()) t_correlation_stack.pop_back();
  }

  // User-scope ranges (record_function, and the tpu::fused_graph range a
  // graph launched outside any op runs under) come through here: launches
  // made directly inside one are linked to it.
  void pushUserCorrelationId(uint64_t id) override { t_correlation_stack.push_back(id); }

  void popUserCorrelationId() override {
    if (!t_correlation_stack.empty()) t_correlation_stack.pop_back();
  }

 private:
  std::mutex mutex_;
  std::vector<runtime::LaunchSpan> spans_;
  int64_t clock_offset_ns_ = 0;
  int64_t start_ns_ = 0;
  int64_t end_ns_ = 0;
  // Kept for the trace's lifetime: the logger may keep pointers to them.
  std::unique_ptr<libkineto::TraceSpan> span_;
  std::vector<std::unique_ptr<libkineto::GenericTraceActivity>> activities_;
};

class TpuActivityProfiler final : public libkineto::IActivityProfiler {
 public:
  const std::string& name() const override { return name_; }

  const std::set<libkineto::ActivityType>& availableActivities() const override { return activities_; }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(const std::set<libkineto::ActivityType>& types,
                                                                  const libkineto::Config&) override {
    // Kineto asks every child profiler, whatever the profile's activities;
    // no session (Kineto skips a null one) unless device kernels are wanted.
    if (!types.count(libkineto::ActivityType::CONCURRENT_KERNEL) && !types.count(libkineto::ActivityType::GPU_MEMCPY)) {
      return nullptr;
    }
    return std::make_unique<TpuTraceSession>();
  }

  std::unique_ptr<libkineto::IActivityProfilerSession> configure(int64_t, int64_t,
                                                                  const std::set<libkineto::ActivityType>& types,
                                                                  const libkineto::Config& config) override {
    return configure(types, config);
  }

 private:
  std::string name_ = "tpu";
  std::set<libkineto::ActivityType> activities_{libkineto::ActivityType::CONCURRENT_KERNEL,
                                                libkineto::ActivityType::GPU_MEMCPY};
};

REGISTER_PRIVATEUSE1_PROFILER(TpuActivityProfiler);

}  // namespace

uint64_t trace_correlation_id() {
  if (g_recording_sessions.load(std::memory_order_relaxed) == 0 || t_correlation_stack.empty()) return 0;
  return t_correlation_stack.back();
}
bool has_device_trace() { return true; }
#else
uint64_t trace_correlation_id() { return 0; }
bool has_device_trace() { return false; }
#endif

}  // namespace torch_tpu::aten
