#include "cache/warnings.h"

#include <cstdio>
#include <memory>
#include <mutex>
#include <utility>

namespace torch_tpu::cache {

namespace {

void write_to_stderr(const std::string& message) {
  std::fprintf(stderr, "torch_tpu warning: %s\n", message.c_str());
}

std::mutex& handler_mutex() {
  static std::mutex mutex;
  return mutex;
}

// Held by shared_ptr so warn() can call the handler outside the mutex (the
// Python handler takes the GIL; holding our mutex there could deadlock)
// while another thread replaces it.
std::shared_ptr<const WarningHandler>& handler_slot() {
  static std::shared_ptr<const WarningHandler> slot;
  return slot;
}

}  // namespace

void set_warning_handler(WarningHandler handler) {
  std::shared_ptr<const WarningHandler> next;
  if (handler) next = std::make_shared<const WarningHandler>(std::move(handler));
  std::lock_guard<std::mutex> lock(handler_mutex());
  handler_slot().swap(next);
  // `next` (the old handler) is destroyed after the lock is released.
}

void warn(const std::string& message) {
  std::shared_ptr<const WarningHandler> handler;
  {
    std::lock_guard<std::mutex> lock(handler_mutex());
    handler = handler_slot();
  }
  if (handler) {
    try {
      (*handler)(message);
      return;
    } catch (...) {
      // Fall through: a warning must never turn into an error.
    }
  }
  write_to_stderr(message);
}

}  // namespace torch_tpu::cache
