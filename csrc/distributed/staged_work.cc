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

StagedWork::StagedWork(std::vector<at::Tensor> outputs, c10d::OpType type,
                       const char* profiling_title)
    : c10d::Work(-1, type, profiling_title),
      outputs_(std::move(outputs)),
      future_(c10::make_intrusive<c10::ivalue::Future>(
          c10::ListType::ofTensors(), devices_of(outputs_))) {
  future_->markCompleted(c10::IValue(outputs_));
  finish();
}

}  // namespace torch_tpu::distributed
