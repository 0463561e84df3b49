#include "aten/eager_mode.h"

#include <c10/util/Exception.h>
#include <torch/csrc/autograd/graph_task.h>

#include <atomic>
#include <string>

#include "aten/fused_graph.h"
#include "runtime/config.h"

namespace torch_tpu::aten {

namespace {

EagerMode start_up_mode() {
  const std::string name = config::get(config::kEagerMode);
  try {
    return parse_eager_mode(name);
  } catch (const c10::ValueError&) {
    TORCH_CHECK_VALUE(false, config::kEagerMode.name, "='", name,
                      "' is not a tpu eager mode: expected 'strict', 'fused' or 'debug'");
  }
}

std::atomic<int>& mode_slot() {
  static std::atomic<int> mode{static_cast<int>(start_up_mode())};
  return mode;
}

// The thread's own mode; -1: the process's.
thread_local int t_thread_mode = -1;

}  // namespace

EagerMode eager_mode() {
  if (t_thread_mode >= 0) return static_cast<EagerMode>(t_thread_mode);
  // A device graph capture records the backward passes its code starts,
  // which autograd runs on its own thread (fused_graph.h).
  if (capture_recording() && torch::autograd::get_current_graph_task_id() >= 0) return EagerMode::kFused;
  return static_cast<EagerMode>(mode_slot().load(std::memory_order_relaxed));
}

bool thread_has_own_eager_mode() { return t_thread_mode >= 0; }

std::optional<EagerMode> set_thread_eager_mode(std::optional<EagerMode> mode) {
  const std::optional<EagerMode> previous =
      t_thread_mode >= 0 ? std::optional<EagerMode>(static_cast<EagerMode>(t_thread_mode)) : std::nullopt;
  const bool was_fused = eager_mode() == EagerMode::kFused;
  t_thread_mode = mode ? static_cast<int>(*mode) : -1;
  if (was_fused && eager_mode() != EagerMode::kFused) materialize_this_thread(MaterializeReason::kModeSwitch);
  return previous;
}

void set_eager_mode(EagerMode mode) {
  if (eager_mode() == EagerMode::kFused && mode != EagerMode::kFused) {
    materialize_all(MaterializeReason::kModeSwitch);
  }
  mode_slot().store(static_cast<int>(mode), std::memory_order_relaxed);
}

const char* eager_mode_name(EagerMode mode) {
  switch (mode) {
    case EagerMode::kStrict: return "strict";
    case EagerMode::kFused: return "fused";
    case EagerMode::kDebug: return "debug";
  }
  return "?";
}

EagerMode parse_eager_mode(const std::string& name) {
  if (name == "strict") return EagerMode::kStrict;
  if (name == "fused") return EagerMode::kFused;
  if (name == "debug") return EagerMode::kDebug;
  TORCH_CHECK_VALUE(false, "unknown tpu eager mode '", name, "': expected 'strict', 'fused' or 'debug'");
}

}  // namespace torch_tpu::aten
