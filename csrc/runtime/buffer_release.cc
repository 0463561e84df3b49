#include "runtime/buffer_release.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <iterator>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "runtime/device_buffer.h"

namespace torch_tpu::runtime {

namespace {

struct Dropped {
  int device;
  pjrt::Buffer buffer;
};

struct Releaser {
  std::mutex mutex;
  std::condition_variable work_arrived;
  std::condition_variable batch_done;
  std::vector<Dropped> queued;
  bool busy = false;  // the thread is destroying a batch it took
  bool started = false;
  bool stopped = false;
};

// Never destroyed: its detached thread waits on it for the process's life.
Releaser& releaser() {
  static Releaser* r = new Releaser();
  return *r;
}

// A forked child has the parent's memory but not its threads (nor, maybe,
// an unlocked mutex): it destroys where it drops and never touches the queue.
std::atomic<bool> g_in_forked_child{false};
[[maybe_unused]] const int g_atfork_registered = [] {
  pthread_atfork(nullptr, nullptr, [] { g_in_forked_child.store(true); });
  return 0;
}();

// Buffers of each device dropped and not yet destroyed.
std::atomic<int64_t> g_waiting[kMaxDevices];

// `done`, if given, is told after each buffer (a waiter for one device's
// buffers need not wait for the rest of a batch).
void destroy(std::vector<Dropped>& dropped, std::condition_variable* done = nullptr) {
  for (Dropped& d : dropped) {  // in the order they were dropped
    d.buffer.reset();
    g_waiting[d.device].fetch_sub(1, std::memory_order_relaxed);
    if (done) done->notify_all();
  }
  dropped.clear();
}

// How long the release thread lets dropped buffers gather after a batch
// before it takes the next. Buffers are dropped in bursts (the old values
// a launch replaces, the saved values a backward frees, an optimizer's
// temporaries); woken for each, the thread took them one at a time, and
// where the cores are busy with the device's work each wake could preempt
// the dropping thread: in AdamW steps over minGPT's 29 parameters, a fifth
// of the recording thread's samples were those switches. A drop signals
// only a thread waiting on the queue, so sleeping here wakes nobody.
constexpr std::chrono::microseconds kGatherWindow{200};

void release_loop(Releaser& r) {
  // Named, or it carries the name of whichever thread first dropped a
  // buffer (often the autograd engine's) in profiles and debuggers.
  pthread_setname_np(pthread_self(), "tpu_release");
  std::vector<Dropped> batch;
  std::unique_lock<std::mutex> lock(r.mutex);
  for (;;) {
    r.work_arrived.wait(lock, [&r] { return !r.queued.empty(); });
    batch.swap(r.queued);
    r.busy = true;
    lock.unlock();
    destroy(batch, &r.batch_done);
    lock.lock();
    r.busy = false;
    r.batch_done.notify_all();
    lock.unlock();
    std::this_thread::sleep_for(kGatherWindow);
    lock.lock();
  }
}

}  // namespace

void release_later(int device, pjrt::Buffer buffer) {
  if (!buffer.valid() || g_in_forked_child.load(std::memory_order_relaxed)) return;
  Releaser& r = releaser();
  bool was_empty = false;
  {
    std::lock_guard<std::mutex> lock(r.mutex);
    if (!r.stopped) {
      if (!r.started) {
        std::thread(release_loop, std::ref(r)).detach();
        r.started = true;
      }
      was_empty = r.queued.empty();
      g_waiting[device].fetch_add(1, std::memory_order_relaxed);
      r.queued.push_back({device, std::move(buffer)});
    }
  }
  // Stopped: `buffer` still holds it and goes here.
  if (was_empty) r.work_arrived.notify_one();
}

void release_queued_now(int device) {
  if (g_in_forked_child.load(std::memory_order_relaxed)) return;
  Releaser& r = releaser();
  std::vector<Dropped> taken;
  {
    std::unique_lock<std::mutex> lock(r.mutex);
    auto mine = std::stable_partition(r.queued.begin(), r.queued.end(),
                                      [device](const Dropped& d) { return d.device != device; });
    std::move(mine, r.queued.end(), std::back_inserter(taken));
    r.queued.erase(mine, r.queued.end());
    // The thread's batch may hold some of them too. Only those are waited
    // for: the batch's buffers of other devices may wait for their work.
    const auto in_batch = [&r, &taken, device] {
      return r.busy && g_waiting[device].load(std::memory_order_relaxed) > static_cast<int64_t>(taken.size());
    };
    r.batch_done.wait(lock, [&in_batch] { return !in_batch(); });
  }
  destroy(taken);
}

void stop_deferred_release() {
  if (g_in_forked_child.load(std::memory_order_relaxed)) return;
  Releaser& r = releaser();
  std::vector<Dropped> taken;
  {
    std::unique_lock<std::mutex> lock(r.mutex);
    r.stopped = true;
    taken.swap(r.queued);
    r.batch_done.wait(lock, [&r] { return !r.busy; });
  }
  destroy(taken);
}

int64_t buffers_awaiting_release(int device) {
  return g_waiting[device].load(std::memory_order_relaxed);
}

}  // namespace torch_tpu::runtime
