#include "aten/eager_mode.h"

#include <c10/util/Exception.h>

#include <atomic>

#include "aten/fused_graph.h"
#include "runtime/config.h"

namespace torch_tpu::aten {

namespace {

std::atomic<int>& mode_slot() {
  static std::atomic<int> mode{static_cast<int>(parse_eager_mode(config::get(config::kEagerMode)))};
  return mode;
}

}  // namespace

EagerMode eager_mode() { return static_cast<EagerMode>(mode_slot().load(std::memory_order_relaxed)); }

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
