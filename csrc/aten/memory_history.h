// Memory history for torch.tpu.memory._record_memory_history / _snapshot:
// which live device buffers exist and where each was made (the Python and,
// optionally, C++ stack of its allocation), and a bounded trace of
// allocations, frees and out-of-memory errors. The snapshot has the shape
// of torch.cuda.memory._snapshot(), so PyTorch's memory viewer
// (torch.cuda._memory_viz, pytorch.org/memory_viz) reads it.
//
// There is no caching allocator: every live buffer is one segment holding
// one block, and a buffer's "address" is an identifier of the buffer, not a
// device address.
#pragma once

#include <torch/csrc/profiler/combined_traceback.h>

#include <cstdint>
#include <memory>
#include <vector>

namespace torch_tpu::aten::memory_history {

// What is recorded, as torch.cuda.memory._record_memory_history names it:
// `trace` keeps the history of actions (enabled="all"); `context` says
// which of the live blocks / allocations / frees get stacks.
enum class Context { kNone, kState, kAlloc, kAll };
enum class Action { kAlloc, kFreeRequested, kFreeCompleted, kOom };
inline constexpr int kActionCount = 4;

struct Settings {
  bool trace = false;
  Context context = Context::kNone;
  bool cpp_frames = false;
  size_t max_entries = 0;
  std::vector<Action> skip;
};

// Replaces the settings. `clear_trace` also drops the recorded history
// (turning the trace off always does, as on CUDA).
void configure(const Settings& settings, bool clear_trace);

// Called for every counted device buffer as it is counted (`bytes` > 0)
// and as it goes (`bytes` < 0).
void on_buffer(const void* id, int64_t bytes, int device);
// Called for every pending (fused) buffer as it is made and, if its graph
// never produces it, as it goes: its stack is the op's.
void on_pending(const void* id, bool made);
// Called when an allocation of `bytes` is refused with an out-of-memory
// error; `device_free` is what the device had free.
void on_out_of_memory(int device, int64_t bytes, int64_t device_free);

// Called when a thread's outermost hold of the runtime's values lock ends
// (runtime::ValuesLock): the stack of buffers made under it is taken here.
void on_values_lock_released() noexcept;

// The stack of an allocation. Buffers made under the values lock by a
// thread without the GIL share one box, filled when the lock is released
// (taking the GIL under the lock could deadlock).
struct StackBox {
  std::shared_ptr<torch::CapturedTraceback> traceback;  // null: none (yet)
};
using Stack = std::shared_ptr<StackBox>;

struct Block {
  uintptr_t address;
  int device;
  int64_t bytes;
  Stack stack;  // null: none recorded
};

struct Event {
  Action action;
  uintptr_t address;
  int device;
  int64_t bytes;
  int64_t device_free;  // kOom only
  int64_t time_us;      // since the Unix epoch
  Stack stack;
};

struct State {
  std::vector<Block> blocks;  // every live buffer, in address order
  std::vector<Event> trace;   // oldest first
};

State snapshot();

const char* action_name(Action action);

}  // namespace torch_tpu::aten::memory_history
