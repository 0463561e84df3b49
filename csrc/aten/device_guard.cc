// The device guard of the tpu device (PrivateUse1): current device, streams
// and events, as DeviceGuard, torch.Stream, torch.Event and torch.accelerator
// use them.
//
// Each device is one in-order queue (runtime/device_queue.h): every launch on
// a device is tracked there and a synchronize waits for all of it. Streams
// are names for that queue: the default stream has id 0, and each new or
// pool stream gets its own id (so that `with stream:` makes it, and its
// device, current, as torch.Stream's context manager does only for a stream
// that is not current yet), but all of a device's streams run in its one
// order. Data dependencies between devices are ordered by PJRT itself
// (buffer definition events), so making one stream wait on an event needs no
// work.
#include "aten/device_guard.h"

#include <c10/core/DeviceCapability.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>
#include <c10/util/Exception.h>

#include <pthread.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/device_graph.h"
#include "aten/dtypes.h"
#include "aten/fused_graph.h"
#include "runtime/current_device.h"
#include "runtime/device_buffer.h"
#include "runtime/device_queue.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

namespace {

constexpr c10::DeviceType kTpu = c10::DeviceType::PrivateUse1;
// The code CUDA reports for an invalid device ordinal (cudaErrorInvalidDevice),
// so code that inspects torch.AcceleratorError.error_code sees the same.
constexpr int32_t kInvalidDeviceCode = 101;

std::mutex g_callbacks_mutex;
RuntimeCallbacks g_callbacks;

std::atomic<bool> g_bad_fork{false};

// Registered once per process: a child forked after the runtime existed has
// the runtime's memory but none of the plugin's threads.
[[maybe_unused]] const int g_atfork_registered = [] {
  pthread_atfork(nullptr, nullptr, [] {
    if (runtime::Runtime::is_initialized()) g_bad_fork.store(true);
  });
  return 0;
}();

std::string device_count_phrase(c10::DeviceIndex count) {
  if (count == 0) return "this process has no tpu device";
  return "this process has " + std::to_string(count) + " tpu device" +
         (count == 1 ? "" : "s") + " (tpu:0 to tpu:" + std::to_string(count - 1) + ")";
}

}  // namespace

c10::DeviceIndex runtime_device_count() noexcept {
  if (!runtime::Runtime::is_initialized()) return 0;
  try {
    size_t n = runtime::Runtime::get().client().devices().size();
    // Per-device tables in the runtime hold kMaxDevices entries.
    if (n > static_cast<size_t>(runtime::kMaxDevices)) n = runtime::kMaxDevices;
    return static_cast<c10::DeviceIndex>(n);
  } catch (...) {
    return 0;
  }
}

bool in_bad_fork() noexcept { return g_bad_fork.load(std::memory_order_relaxed); }

void set_runtime_callbacks(RuntimeCallbacks callbacks) {
  std::lock_guard<std::mutex> lock(g_callbacks_mutex);
  g_callbacks = std::move(callbacks);
}

bool probe_available() noexcept {
  try {
    std::function<bool()> probe;
    {
      std::lock_guard<std::mutex> lock(g_callbacks_mutex);
      probe = g_callbacks.is_available;
    }
    return probe ? probe() : false;
  } catch (...) {
    return false;
  }
}

void ensure_runtime() {
  TORCH_CHECK(!in_bad_fork(),
              "Cannot use the tpu device in a forked subprocess: the parent process had "
              "already initialized it. To use tpu with multiprocessing, use the 'spawn' "
              "start method.");
  if (runtime::Runtime::is_initialized()) return;

  std::function<void()> initialize;
  {
    std::lock_guard<std::mutex> lock(g_callbacks_mutex);
    initialize = g_callbacks.initialize;
  }
  TORCH_CHECK(initialize,
              "the tpu runtime is not initialized and torch_tpu registered no initializer; "
              "`import torch_tpu` before using the tpu device");
  // The initializer runs Python that must not come back here; if it does,
  // fail instead of deadlocking on its lock.
  thread_local bool t_initializing = false;
  TORCH_CHECK(!t_initializing, "tpu runtime initialization re-entered itself");
  t_initializing = true;
  try {
    initialize();
  } catch (...) {
    t_initializing = false;
    throw;
  }
  t_initializing = false;
  TORCH_CHECK(runtime::Runtime::is_initialized(),
              "the tpu runtime initializer returned without creating the runtime");
}

void check_device_index(c10::DeviceIndex index) {
  ensure_runtime();
  c10::DeviceIndex count = runtime_device_count();
  if (index >= 0 && index < count) return;
  throw c10::AcceleratorError(
      {__func__, __FILE__, static_cast<uint32_t>(__LINE__)}, kInvalidDeviceCode,
      "tpu error: invalid device ordinal: tpu:" + std::to_string(index) +
          " does not exist; " + device_count_phrase(count));
}

c10::DeviceIndex current_device_index() noexcept {
  return static_cast<c10::DeviceIndex>(runtime::current_device());
}

c10::DeviceIndex resolve_device_index(c10::DeviceIndex index) {
  return index < 0 ? current_device_index() : index;
}

c10::DeviceIndex exchange_device_index(c10::DeviceIndex index) {
  if (index < 0) return -1;  // "no device", as torch.cuda treats it
  c10::DeviceIndex previous = current_device_index();
  if (index != previous) {
    check_device_index(index);
    runtime::set_current_device(index);
  }
  return previous;
}

namespace {

// What a torch.Event on tpu holds. Recording remembers the device; waiting
// on the event waits for everything launched on that device so far, which
// includes (and may exceed) the work before the record: the queue is not
// split at the record point. A timing event (enable_timing=True) instead
// synchronizes the device when it is recorded and stamps the host clock, so
// elapsed_time() is host wall time between two drained points.
struct TpuEvent {
  c10::DeviceIndex device = -1;
  bool recorded = false;
  bool timing = false;
  std::chrono::steady_clock::time_point when{};
};

TpuEvent* as_event(void* event) { return static_cast<TpuEvent*>(event); }

class TpuGuardImpl final : public c10::impl::DeviceGuardImplInterface {
 public:
  c10::DeviceType type() const override { return kTpu; }

  c10::Device exchangeDevice(c10::Device device) const override {
    check_type(device);
    if (device.index() < 0) return getDevice();
    return c10::Device(kTpu, exchange_device_index(device.index()));
  }

  c10::Device getDevice() const override { return c10::Device(kTpu, current_device_index()); }

  void setDevice(c10::Device device) const override {
    check_type(device);
    check_device_index(device.index());
    runtime::set_current_device(device.index());
  }

  // Restores a device a guard saw as current, so it was valid then.
  void uncheckedSetDevice(c10::Device device) const noexcept override {
    if (device.index() >= 0) runtime::set_current_device(device.index());
  }

  // The calling thread's current stream of the device (the default one
  // until a stream is made current).
  c10::Stream getStream(c10::Device device) const override {
    const c10::DeviceIndex index = valid_index(device);
    return stream_with_id(index, current_stream_ids()[index]);
  }
  c10::Stream getDefaultStream(c10::Device device) const override {
    return stream_with_id(valid_index(device), 0);
  }
  c10::Stream getStreamFromGlobalPool(c10::Device device, bool) const override { return getNewStream(device, 0); }
  c10::Stream getNewStream(c10::Device device, int) const override {
    static std::atomic<c10::StreamId> next_id{1};
    return stream_with_id(valid_index(device), next_id++);
  }
  c10::Stream exchangeStream(c10::Stream stream) const override {
    const c10::DeviceIndex index = valid_index(stream.device());
    c10::StreamId& current = current_stream_ids()[index];
    const c10::Stream previous = stream_with_id(index, current);
    current = stream.id();
    return previous;
  }

  // Never throws, as PyTorch requires. Before the runtime exists this
  // creates it (once; a failure counts as 0 devices) instead of answering 0:
  // the autograd engine sizes its per-device queues from this, once, at the
  // first backward of the process, and a 0 there breaks every later backward
  // on tpu ("device_ready_queues_ ... INTERNAL ASSERT FAILED"), e.g. after a
  // CPU backward that ran before the first tpu tensor.
  c10::DeviceIndex deviceCount() const noexcept override {
    static std::atomic<bool> tried{false};
    if (!runtime::Runtime::is_initialized() && !in_bad_fork() && !tried.exchange(true)) {
      try {
        ensure_runtime();
      } catch (...) {
      }
    }
    return runtime_device_count();
  }

  c10::DeviceCapability getDeviceCapability(c10::Device device) const override {
    check_device_index(resolve_device_index(device.index()));
    // The dtypes that have an XLA element type here (dtypes.h); the
    // rest (quantized, 1 - 7 bit integers, 4-bit floats, complex32,
    // bits, e8m0) are refused by every op.
    const bool tpu_platform = runtime::Runtime::get().client().platform_name() == "tpu";
    auto supported = [tpu_platform](c10::ScalarType type) {
      // TPUs have no 64-bit floating point.
      const bool f64 = type == c10::ScalarType::Double || type == c10::ScalarType::ComplexDouble;
      return has_element_type(type) && !(tpu_platform && f64);
    };
    c10::DeviceCapability capability;
    auto& types = capability.capability_data.supported_scalar_types;
#define TPU_SET_SUPPORTED(_, name) types.has_##name = supported(c10::ScalarType::name);
    AT_FORALL_SCALAR_TYPES_WITH_COMPLEX_AND_QINTS(TPU_SET_SUPPORTED)
#undef TPU_SET_SUPPORTED
    return capability;
  }

  bool queryStream(const c10::Stream& stream) const override {
    if (!runtime::Runtime::is_initialized()) return true;  // nothing was ever launched
    c10::DeviceIndex index = resolve_device_index(stream.device_index());
    check_device_index(index);
    return launched_and_idle(index);
  }

  // A tpu graph capture records the capturing thread's work, whatever its
  // stream (device_graph.h).
  bool isStreamCapturing(const c10::Stream& stream) const override {
    return graph_capturing(resolve_device_index(stream.device_index()));
  }

  void synchronizeStream(const c10::Stream& stream) const override {
    synchronizeDevice(stream.device_index());
  }

  void synchronizeDevice(const c10::DeviceIndex device_index) const override {
    if (!runtime::Runtime::is_initialized()) return;
    c10::DeviceIndex index = resolve_device_index(device_index);
    check_device_index(index);
    synchronize_device(index);
    // A device-side error pending from earlier work surfaces here, as a
    // device assert does at any CUDA synchronize.
    raise_failed_checks();
  }

  void record(void** event, const c10::Stream& stream, const c10::DeviceIndex device_index,
              const c10::EventFlag flag) const override {
    TORCH_CHECK(device_index == -1 || device_index == stream.device_index(),
                "Event device index ", static_cast<int>(device_index),
                " does not match recording stream's device index ",
                static_cast<int>(stream.device_index()), ".");
    c10::DeviceIndex index = resolve_device_index(stream.device_index());
    check_device_index(index);
    auto* e = as_event(*event);
    if (e == nullptr) {
      e = new TpuEvent();
      *event = e;
    }
    e->device = index;
    e->timing = flag == c10::EventFlag::BACKEND_DEFAULT;
    if (e->timing) {
      synchronize_device(index);
      e->when = std::chrono::steady_clock::now();
    }
    e->recorded = true;
  }

  // One in-order queue per device and PJRT-ordered transfers between
  // devices: a stream never has to wait for an event explicitly.
  void block(void* event, const c10::Stream& stream) const override {}

  bool queryEvent(void* event) const override {
    auto* e = as_event(event);
    if (e == nullptr || !e->recorded) return true;
    return launched_and_idle(e->device);
  }

  void synchronizeEvent(void* event) const override {
    auto* e = as_event(event);
    if (e == nullptr || !e->recorded) return;
    synchronize_device(e->device);
    raise_failed_checks();
  }

  void destroyEvent(void* event, const c10::DeviceIndex) const noexcept override {
    delete as_event(event);
  }

  double elapsedTime(void* start, void* end, const c10::DeviceIndex) const override {
    auto* a = as_event(start);
    auto* b = as_event(end);
    TORCH_CHECK(a && b && a->recorded && b->recorded,
                "Both events must be recorded before calculating elapsed time.");
    TORCH_CHECK(a->timing && b->timing,
                "Both events must be created with argument 'enable_timing=True'.");
    // Each device has a clock of its own on a real accelerator: CUDA
    // refuses the pair too.
    TORCH_CHECK(a->device == b->device, "elapsed_time: the events were recorded on different tpu devices (",
                static_cast<int>(a->device), " and ", static_cast<int>(b->device), ")");
    return std::chrono::duration<double, std::milli>(b->when - a->when).count();
  }

 private:
  // Whether the device has finished its work. Fused eager's pending graph
  // is launched first (without waiting): it is work recorded on the device,
  // and a loop polling query() would otherwise wait for it forever.
  static bool launched_and_idle(c10::DeviceIndex index) {
    materialize_all(MaterializeReason::kSynchronize);
    return runtime::is_idle(index);
  }

  static void check_type(c10::Device device) {
    TORCH_CHECK(device.type() == kTpu, "expected a tpu device, got ", device);
  }

  static c10::DeviceIndex valid_index(c10::Device device) {
    check_type(device);
    const c10::DeviceIndex index = resolve_device_index(device.index());
    check_device_index(index);
    return index;
  }

  static c10::Stream stream_with_id(c10::DeviceIndex index, c10::StreamId id) {
    return c10::Stream(c10::Stream::UNSAFE, c10::Device(kTpu, index), id);
  }

  // Per thread, as CUDA's current streams are.
  static std::vector<c10::StreamId>& current_stream_ids() {
    thread_local std::vector<c10::StreamId> ids;
    if (ids.size() < static_cast<size_t>(runtime_device_count())) ids.resize(runtime_device_count(), 0);
    return ids;
  }
};

}  // namespace

C10_REGISTER_GUARD_IMPL(PrivateUse1, TpuGuardImpl);

}  // namespace torch_tpu::aten
