// DDP's reducer times forward, backward compute and communication through
// a Timer registered per device type (CUDA's records stream events). The
// tpu's records host timestamps, as CPU's does: backward compute then ends
// when its last op has been dispatched, not executed, while communication is
// timed exactly (the tpu backend's collectives return when done). Without a
// registered timer DDP warns at construction and logs no runtime stats.
#include <torch/csrc/distributed/c10d/reducer_timer.hpp>

namespace torch_tpu::distributed {

namespace {

class HostTimer : public c10d::Timer {
 public:
  explicit HostTimer(c10::Device /*device*/) {}

  std::optional<int64_t> measureDifference(Event start, Event end) override {
    auto start_ns = getTimestamp(start);
    auto end_ns = getTimestamp(end);
    if (!start_ns || !end_ns || *end_ns < *start_ns) return std::nullopt;
    return *end_ns - *start_ns;
  }
};

}  // namespace

}  // namespace torch_tpu::distributed

namespace c10d {
C10_REGISTER_TYPED_CLASS(TimerRegistry, c10::kPrivateUse1,
                         torch_tpu::distributed::HostTimer)
}  // namespace c10d
