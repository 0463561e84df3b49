#include "aten/deferred_checks.h"

#include <c10/util/Exception.h>

#include <iterator>
#include <mutex>
#include <utility>
#include <vector>

#include "aten/eager_mode.h"
#include "aten/graph_capture.h"
#include "aten/op_runner.h"

namespace torch_tpu::aten {

namespace {

struct PendingCheck {
  runtime::DeviceBufferPtr flag;
  CheckError error;
  std::string message;
};

// A loop that never syncs would grow the list forever; past this many
// pending flags they are read at the next registration (a sync there).
constexpr size_t kMaxPending = 1024;

std::mutex& pending_mutex() {
  static std::mutex mutex;
  return mutex;
}

std::vector<PendingCheck>& pending() {
  static std::vector<PendingCheck> checks;
  return checks;
}

[[noreturn]] void raise(const PendingCheck& check) {
  switch (check.error) {
    case CheckError::kIndex: TORCH_CHECK_INDEX(false, check.message);
    case CheckError::kValue: TORCH_CHECK_VALUE(false, check.message);
    case CheckError::kRuntime: break;
  }
  TORCH_CHECK(false, check.message);
}

}  // namespace

void defer_check(const at::Tensor& violated, CheckError error, std::string message) {
  TORCH_INTERNAL_ASSERT(violated.dim() == 0 && violated.scalar_type() == c10::kBool);
  runtime::DeviceBufferPtr flag = dense_value(violated, "deferred check");
  note_deferred_check(flag.get(), error, message);
  bool full = false;
  {
    std::lock_guard<std::mutex> lock(pending_mutex());
    pending().push_back({std::move(flag), error, std::move(message)});
    full = pending().size() >= kMaxPending;
  }
  // Debug eager raises at the op that failed the check.
  if (eager_mode() == EagerMode::kDebug) full = true;
  if (full) raise_failed_checks();
}

void raise_failed_checks() {
  std::vector<PendingCheck> checks;
  {
    std::lock_guard<std::mutex> lock(pending_mutex());
    if (pending().empty()) return;
    checks.swap(pending());
  }
  // One error at a time: the checks not read yet stay pending for the next
  // sync (a second bad gather must raise too, not read clamped). An op
  // with several checks flags at most one of them.
  auto keep_pending_after = [&](size_t i) {
    std::lock_guard<std::mutex> lock(pending_mutex());
    pending().insert(pending().begin(), std::make_move_iterator(checks.begin() + i + 1),
                     std::make_move_iterator(checks.end()));
  };
  for (size_t i = 0; i < checks.size(); ++i) {
    bool violated = false;
    try {
      checks[i].flag->buffer().to_host(&violated, sizeof violated);
    } catch (...) {  // the flag's program failed: its own error is raised
      keep_pending_after(i);
      throw;
    }
    if (!violated) continue;
    PendingCheck failed = std::move(checks[i]);
    keep_pending_after(i);
    raise(failed);
  }
}

}  // namespace torch_tpu::aten
