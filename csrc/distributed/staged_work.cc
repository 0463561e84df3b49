#include "distributed/staged_work.h"

#include <ATen/core/ivalue.h>
#include <ATen/core/jit_type.h>

#include <algorithm>

namespace torch_tpu::distributed {

namespace {

// A future holding tpu tensors must name their devices: it records an event
// on each so that callbacks on other streams order after the values.
std::vector<c10::Device> devices_of(const std::vector<at::Tensor>& tensors) {
  std::vector<c10::Device> devices;
  for (const auto& t : tensors) {
    if (t.defined() && !t.is_cpu() &&
        std::find(devices.begin(), devices.end(), t.device()) == devices.end()) {
      devices.push_back(t.device());
    }
  }
  return devices;
}

}  // namespace

// No profiling title: the Work would open a profiler range only after the
// collective finished. The dispatcher's c10d op is recorded around it.
StagedWork::StagedWork(std::vector<at::Tensor> outputs, c10d::OpType type)
    : c10d::Work(-1, type),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::ofTensors(), devices_of(outputs_))) {
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

PendingWork::PendingWork(c10::intrusive_ptr<c10d::Work> host_work,
                         std::vector<at::Tensor> outputs,
                         std::function<void()> complete, c10d::OpType type)
    : c10d::Work(-1, type),
      host_work_(std::move(host_work)),
      outputs_(std::move(outputs)),
      complete_(std::move(complete)) {}

void PendingWork::complete_once() {
  std::call_once(completed_once_, [this] {
    if (complete_) complete_();
    finish();
  });
}

bool PendingWork::isCompleted() {
  if (!host_work_->isCompleted()) return false;
  if (!host_work_->isSuccess()) return true;
  complete_once();
  return true;
}

bool PendingWork::isSuccess() const { return host_work_->isSuccess(); }

// A transfer the host backend reports as not done (aborted) leaves the tpu
// tensors as they were.
bool PendingWork::wait(std::chrono::milliseconds timeout) {
  if (!host_work_->wait(timeout)) return false;
  complete_once();
  return true;
}

}  // namespace torch_tpu::distributed
