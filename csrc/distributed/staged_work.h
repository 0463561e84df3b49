// The Work a host-staged collective returns. The collective has finished
// (its results are back on the device) when the Work is made, so waiting
// returns at once; the future carries the outputs for communication hooks
// (DDP's reducer chains on it).
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <vector>

namespace torch_tpu::distributed {

class StagedWork : public c10d::Work {
 public:
  StagedWork(std::vector<at::Tensor> outputs, c10d::OpType type,
             const char* profiling_title);

  bool isCompleted() override { return true; }
  bool isSuccess() const override { return true; }
  bool wait(std::chrono::milliseconds timeout) override { return true; }
  std::vector<at::Tensor> result() override { return outputs_; }
  c10::intrusive_ptr<c10::ivalue::Future> getFuture() override {
    return future_;
  }

 private:
  std::vector<at::Tensor> outputs_;
  c10::intrusive_ptr<c10::ivalue::Future> future_;
};

}  // namespace torch_tpu::distributed
