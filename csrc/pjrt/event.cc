#include "pjrt/event.h"

#include <utility>

namespace torch_tpu::pjrt {

Event& Event::operator=(Event&& other) noexcept {
  if (this != &other) {
    reset();
    api_ = other.api_;
    event_ = std::exchange(other.event_, nullptr);
  }
  return *this;
}

void Event::reset() {
  if (event_ == nullptr) return;
  auto args = c::make_args<c::EventDestroyArgs>();
  args.event = std::exchange(event_, nullptr);
  // Destroying an event cannot meaningfully fail; an error here would only
  // leak the error object, so it is consumed and dropped.
  if (c::Error* error = api_->Event_Destroy(&args)) {
    (void)consume_error(api_, error, "PJRT_Event_Destroy");
  }
}

bool Event::is_ready() const {
  if (event_ == nullptr) return true;
  auto args = c::make_args<c::EventIsReadyArgs>();
  args.event = event_;
  check(api_, api_->Event_IsReady(&args), "PJRT_Event_IsReady");
  return args.is_ready;
}

void Event::await() const {
  if (event_ == nullptr) return;
  auto args = c::make_args<c::EventAwaitArgs>();
  args.event = event_;
  check(api_, api_->Event_Await(&args), "PJRT_Event_Await");
}

namespace {

struct OnReadyState {
  const c::Api* api;
  std::function<void(std::optional<PjrtError>)> done;
};

void on_ready_trampoline(c::Error* error, void* user_arg) {
  auto* state = static_cast<OnReadyState*>(user_arg);
  std::optional<PjrtError> failure;
  if (error != nullptr) {
    failure = consume_error(state->api, error, "PJRT event");
  }
  state->done(std::move(failure));
  delete state;
}

}  // namespace

void Event::on_ready(std::function<void(std::optional<PjrtError>)> done) const {
  if (event_ == nullptr) {
    done(std::nullopt);
    return;
  }
  auto* state = new OnReadyState{api_, std::move(done)};
  auto args = c::make_args<c::EventOnReadyArgs>();
  args.event = event_;
  args.callback = &on_ready_trampoline;
  args.user_arg = state;
  if (c::Error* error = api_->Event_OnReady(&args)) {
    delete state;
    throw consume_error(api_, error, "PJRT_Event_OnReady");
  }
}

}  // namespace torch_tpu::pjrt
