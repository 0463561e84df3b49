#include "aten/deferred_checks.h"

#include <c10/util/Exception.h>

#include <algorithm>
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

namespace {

// Whether a read of `value` must read `check`'s flag first. A graph's
// inputs are computed before it runs, so a fused value cannot depend on a
// graph that runs after its own. A strict op may make its flag after its
// result (in a second program), so a strict value reads every flag.
bool may_feed(const PendingCheck& check, const runtime::DeviceBuffer* value) {
  if (value == nullptr || value->graph_run() == 0) return true;
  if (check.flag->pending()) return false;
  return check.flag->graph_run() <= value->graph_run();
}

// Reads the pending flags that a read of `value` (null: of anything) must
// see, in order, and raises the first violated one.
void raise_failed_checks_for(const runtime::DeviceBuffer* value) {
  std::vector<PendingCheck> checks;
  {
    std::lock_guard<std::mutex> lock(pending_mutex());
    if (pending().empty()) return;
    auto skipped = std::stable_partition(pending().begin(), pending().end(),
                                         [value](const PendingCheck& c) { return may_feed(c, value); });
    std::move(pending().begin(), skipped, std::back_inserter(checks));
    pending().erase(pending().begin(), skipped);
  }
  for (const PendingCheck& check : checks) {
    bool violated = false;
    check.flag->buffer().to_host(&violated, sizeof violated);
    if (violated) {
      // The first violated check raises; every other is dropped unread, as
      // CUDA reports one device-side assert. (Keeping them pending raised
      // stale errors at unrelated later syncs: an op's second check, or
      // the next op of a chain that failed on the same bad input.)
      std::lock_guard<std::mutex> lock(pending_mutex());
      pending().clear();
      raise(check);
    }
  }
}

}  // namespace

void raise_failed_checks() { raise_failed_checks_for(nullptr); }

void raise_failed_checks_for_read(const runtime::DeviceBuffer& value) { raise_failed_checks_for(&value); }

}  // namespace torch_tpu::aten
