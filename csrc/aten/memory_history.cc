#include "aten/memory_history.h"

#include <Python.h>
#include <c10/util/flat_hash_map.h>

#include <algorithm>
#include <chrono>
#include <deque>
#include <mutex>
#include <unordered_map>

#include "runtime/storage_value.h"

namespace torch_tpu::aten::memory_history {

namespace {

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class Recorder {
 public:
  void configure(const Settings& settings, bool clear_trace) {
    std::lock_guard<std::mutex> lock(mutex_);
    settings_ = settings;
    std::fill(std::begin(skipped_), std::end(skipped_), false);
    for (Action a : settings.skip) skipped_[static_cast<int>(a)] = true;
    if (!settings.trace || clear_trace) traces_.clear();
    for (auto& [device, trace] : traces_) {
      while (trace.size() > settings_.max_entries) trace.pop_front();
    }
  }

  void on_buffer(const void* id, int64_t bytes, int device) {
    const auto address = reinterpret_cast<uintptr_t>(id);
    std::unique_lock<std::mutex> lock(mutex_);
    const Context context = settings_.context;
    const bool cpp_frames = settings_.cpp_frames;
    if (bytes > 0) {
      Stack stack;
      if (auto it = pending_.find(address); it != pending_.end()) {
        stack = std::move(it->second);
        pending_.erase(it);
      } else if (context != Context::kNone) {
        lock.unlock();  // gathering takes microseconds; no lock held meanwhile
        stack = gather(cpp_frames);
        lock.lock();
      }
      live_[address] = Block{address, device, bytes, stack};
      record(Action::kAlloc, address, device, bytes, 0, context >= Context::kAlloc ? stack : nullptr);
    } else {
      Stack stack;
      if (context == Context::kAll && settings_.trace) {
        lock.unlock();
        stack = gather(cpp_frames);
        lock.lock();
      }
      live_.erase(address);
      record(Action::kFreeRequested, address, device, -bytes, 0, stack);
      record(Action::kFreeCompleted, address, device, -bytes, 0, stack);
    }
  }

  void on_pending(const void* id, bool made) {
    const auto address = reinterpret_cast<uintptr_t>(id);
    std::unique_lock<std::mutex> lock(mutex_);
    if (!made) {
      pending_.erase(address);
      return;
    }
    if (settings_.context == Context::kNone) return;
    const bool cpp_frames = settings_.cpp_frames;
    lock.unlock();
    Stack stack = gather(cpp_frames);
    lock.lock();
    pending_[address] = std::move(stack);
  }

  void on_out_of_memory(int device, int64_t bytes, int64_t device_free) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (!settings_.trace) return;
    Stack stack;
    if (settings_.context >= Context::kAlloc) {
      const bool cpp_frames = settings_.cpp_frames;
      lock.unlock();
      stack = gather(cpp_frames);
      lock.lock();
    }
    record(Action::kOom, 0, device, bytes, device_free, stack);
  }

  State snapshot() {
    std::lock_guard<std::mutex> lock(mutex_);
    State state;
    state.blocks.reserve(live_.size());
    // Copies of the boxes: a box awaiting its stack is filled under mutex_.
    auto copy = [](const Stack& stack) { return stack ? std::make_shared<StackBox>(*stack) : nullptr; };
    for (const auto& [address, block] : live_) {
      state.blocks.push_back(block);
      state.blocks.back().stack = copy(block.stack);
    }
    std::sort(state.blocks.begin(), state.blocks.end(),
              [](const Block& a, const Block& b) { return a.address < b.address; });
    for (const auto& [device, trace] : traces_) state.trace.insert(state.trace.end(), trace.begin(), trace.end());
    std::stable_sort(state.trace.begin(), state.trace.end(),
                     [](const Event& a, const Event& b) { return a.time_us < b.time_us; });
    for (Event& e : state.trace) e.stack = copy(e.stack);
    return state;
  }

 private:
  // An allocation's stack. Python frames take the GIL (ops run with it
  // released), as CUDA's allocator takes it to record a stack. A thread
  // that holds the values lock must not wait for the GIL: a thread holding
  // the GIL may be waiting for the lock (PyTorch runs `t[0] = 1.5` with the
  // GIL held). Such a thread's buffers share a box that
  // on_values_lock_released() fills once the lock is released; the
  // thread's Python frames are unchanged until then (it is still in the
  // op), and its C++ frames are taken there too. Threads without a Python
  // thread state (autograd's device threads) give C++ frames only.
  static Stack gather(bool cpp_frames) {
    if (runtime::ValuesLock::held_by_this_thread() && !gil_held()) {
      if (!awaiting_release()) awaiting_release() = std::make_shared<StackBox>();
      awaiting_cpp_frames() = awaiting_cpp_frames() || cpp_frames;
      return awaiting_release();
    }
    auto box = std::make_shared<StackBox>();
    box->traceback = traceback_now(cpp_frames);
    return box;
  }

 public:
  static std::shared_ptr<torch::CapturedTraceback> traceback_now(bool cpp_frames) {
    const bool python = Py_IsInitialized() && !_Py_IsFinalizing();
    if (!python && !cpp_frames) return nullptr;
    return torch::CapturedTraceback::gather(python, /*script=*/false, cpp_frames);
  }
  static bool gil_held() { return Py_IsInitialized() && PyGILState_Check(); }
  static Stack& awaiting_release() {
    thread_local Stack box;
    return box;
  }
  static bool& awaiting_cpp_frames() {
    thread_local bool cpp = false;
    return cpp;
  }
  // Fills the box of this thread's buffers made under the values lock.
  void fill_awaiting() {
    Stack box = std::move(awaiting_release());
    awaiting_release() = nullptr;
    const bool cpp = awaiting_cpp_frames();
    awaiting_cpp_frames() = false;
    if (!box) return;
    auto traceback = traceback_now(cpp);
    std::lock_guard<std::mutex> lock(mutex_);
    box->traceback = std::move(traceback);
  }

 private:
  void record(Action action, uintptr_t address, int device, int64_t bytes, int64_t device_free, Stack stack) {
    if (!settings_.trace || skipped_[static_cast<int>(action)] || settings_.max_entries == 0) return;
    std::deque<Event>& trace = traces_[device];
    if (trace.size() == settings_.max_entries) trace.pop_front();
    trace.push_back(Event{action, address, device, bytes, device_free, now_us(), std::move(stack)});
  }

  std::mutex mutex_;
  Settings settings_;
  bool skipped_[kActionCount] = {};
  ska::flat_hash_map<uintptr_t, Block> live_;  // every buffer: no node each
  // Stacks of fused ops' results, kept until their graph runs.
  ska::flat_hash_map<uintptr_t, Stack> pending_;
  // Each device's history, max_entries long (as CUDA keeps one per device).
  std::unordered_map<int, std::deque<Event>> traces_;
};

// Never destroyed: buffers are freed during interpreter and static
// destruction.
Recorder& recorder() {
  static auto* r = new Recorder();
  return *r;
}

}  // namespace

void configure(const Settings& settings, bool clear_trace) { recorder().configure(settings, clear_trace); }

void on_buffer(const void* id, int64_t bytes, int device) { recorder().on_buffer(id, bytes, device); }

void on_pending(const void* id, bool made) { recorder().on_pending(id, made); }

// Called from ValuesLock's destructor, possibly while an exception unwinds:
// nothing may escape.
void on_values_lock_released() noexcept {
  if (!Recorder::awaiting_release()) return;
  try {
    recorder().fill_awaiting();
  } catch (...) {
    Recorder::awaiting_release() = nullptr;  // the box keeps no stack
  }
}

void on_out_of_memory(int device, int64_t bytes, int64_t device_free) {
  recorder().on_out_of_memory(device, bytes, device_free);
}

State snapshot() { return recorder().snapshot(); }

const char* action_name(Action action) {
  switch (action) {
    case Action::kAlloc:
      return "alloc";
    case Action::kFreeRequested:
      return "free_requested";
    case Action::kFreeCompleted:
      return "free_completed";
    case Action::kOom:
      return "oom";
  }
  return "unknown";
}

}  // namespace torch_tpu::aten::memory_history
