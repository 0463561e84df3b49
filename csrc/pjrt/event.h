// An owned PJRT_Event: completion of a transfer or an execution.
#pragma once

#include <functional>
#include <optional>
#include <string>

#include "pjrt/c_api.h"
#include "pjrt/error.h"

namespace torch_tpu::pjrt {

class Event {
 public:
  Event() = default;
  Event(const c::Api* api, c::Event* event) : api_(api), event_(event) {}
  ~Event() { reset(); }
  Event(Event&& other) noexcept { *this = std::move(other); }
  Event& operator=(Event&& other) noexcept;
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;

  bool valid() const { return event_ != nullptr; }
  bool is_ready() const;

  // Blocks until the event fires; throws the work's error if it failed.
  void await() const;

  // Calls `done` once the event fires, from whatever thread the plugin
  // chooses, with the failure message (or nothing on success). The Event
  // object may be destroyed before that.
  void on_ready(std::function<void(std::optional<PjrtError>)> done) const;

  void reset();

 private:
  const c::Api* api_ = nullptr;
  c::Event* event_ = nullptr;
};

}  // namespace torch_tpu::pjrt
