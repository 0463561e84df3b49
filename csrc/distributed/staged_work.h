// The Works the tpu backend returns.
//
// StagedWork: a collective that has finished (its results are back on the
// device) when the Work is made, so waiting returns at once; the future
// carries the outputs for communication hooks (DDP's reducer chains on it).
//
// PendingWork: a point-to-point transfer still running on the host backend,
// which must not block the caller (isend before irecv on both peers is a
// correct program). Waiting for it finishes the host transfer and then copies
// what was received into the tpu tensors, on the waiting thread. It has no
// future, as gloo's point-to-point Works have none.
#pragma once

#include <torch/csrc/distributed/c10d/Work.hpp>

#include <functional>
#include <mutex>
#include <vector>

namespace torch_tpu::distributed {

class StagedWork : public c10d::Work {
 public:
  StagedWork(std::vector<at::Tensor> outputs, c10d::OpType type);

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

class PendingWork : public c10d::Work {
 public:
  PendingWork(c10::intrusive_ptr<c10d::Work> host_work,
              std::vector<at::Tensor> outputs, std::function<void()> complete,
              c10d::OpType type);

  bool isCompleted() override;
  bool isSuccess() const override;
  bool wait(std::chrono::milliseconds timeout) override;
  void abort() override { host_work_->abort(); }
  int sourceRank() const override { return host_work_->sourceRank(); }
  std::vector<at::Tensor> result() override { return outputs_; }

 private:
  void complete_once();

  c10::intrusive_ptr<c10d::Work> host_work_;
  std::vector<at::Tensor> outputs_;
  std::function<void()> complete_;
  std::once_flag completed_once_;
};

}  // namespace torch_tpu::distributed
