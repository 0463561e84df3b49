// The c10d backend "tpu": torch.distributed's collectives on tpu tensors.
//
// Transport. Collectives between processes travel through a host backend
// (gloo over TCP): each collective copies its tpu inputs to host memory,
// runs there, and copies the results back into the tpu tensors before
// it returns. That is the only path every PJRT plugin offers between
// processes (the XLA CPU plugin has no cross-process collectives through the
// C API). On a TPU slice the faster path is XLA's own collectives inside
// programs over the chips' interconnect, through PJRT's distributed runtime;
// it would replace the transport behind this same interface.
//
// CPU tensors given to the backend go straight to the host backend, so one
// process group serves both ("cpu" and "tpu" name the same backend).
#pragma once

#include <torch/csrc/distributed/c10d/Backend.hpp>

#include <mutex>
#include <string>
#include <vector>

namespace torch_tpu::distributed {

class ProcessGroupTPU : public c10d::Backend {
 public:
  ProcessGroupTPU(c10::intrusive_ptr<c10d::Backend> host, int rank, int size);

  const std::string getBackendName() const override { return "tpu"; }
  void setTimeout(std::chrono::milliseconds timeout) override;
  void setGroupUid(const std::string& pg_uid) override;
  void abort() override { host_->abort(); }
  void shutdown() override { host_->shutdown(); }
  void setSequenceNumberForGroup() override;

  // Splitting (dist.split_group, and DeviceMesh's subgroups once
  // init_process_group was given a device_id) splits the host group.
  bool supportsSplitting() const override { return host_->supportsSplitting(); }
  c10::intrusive_ptr<c10d::Backend::Options> getBackendOptions() override { return host_->getBackendOptions(); }
  c10::intrusive_ptr<c10d::Backend> split(const c10::intrusive_ptr<c10d::Store>& store,
                                          const std::vector<int>& ranks,
                                          const c10::intrusive_ptr<c10d::Backend::Options>& opts) override;
  uint64_t getSequenceNumberForGroup() override;

  c10::intrusive_ptr<c10d::Work> broadcast(
      std::vector<at::Tensor>& tensors,
      const c10d::BroadcastOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts) override;
  // Sparse COO tensors (DDP's sparse embedding gradients): gathered and
  // summed on the host by gloo, the result coalesced.
  c10::intrusive_ptr<c10d::Work> allreduce_sparse(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allreduce_coalesced(
      std::vector<at::Tensor>& tensors,
      const c10d::AllreduceCoalescedOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce(
      std::vector<at::Tensor>& tensors,
      const c10d::ReduceOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _allgather_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_coalesced(
      std::vector<std::vector<at::Tensor>>& output_lists,
      std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> allgather_into_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllgatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> gather(
      std::vector<std::vector<at::Tensor>>& outputs,
      std::vector<at::Tensor>& inputs,
      const c10d::GatherOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter(
      std::vector<at::Tensor>& outputs,
      std::vector<std::vector<at::Tensor>>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> _reduce_scatter_base(
      at::Tensor& output, at::Tensor& input,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> reduce_scatter_tensor_coalesced(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::ReduceScatterOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall_base(
      at::Tensor& output, at::Tensor& input,
      std::vector<int64_t>& output_split_sizes,
      std::vector<int64_t>& input_split_sizes,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> alltoall(
      std::vector<at::Tensor>& outputs, std::vector<at::Tensor>& inputs,
      const c10d::AllToAllOptions& opts) override;
  c10::intrusive_ptr<c10d::Work> send(std::vector<at::Tensor>& tensors,
                                      int dst_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recv(std::vector<at::Tensor>& tensors,
                                      int src_rank, int tag) override;
  c10::intrusive_ptr<c10d::Work> recvAnysource(
      std::vector<at::Tensor>& tensors, int tag) override;
  c10::intrusive_ptr<c10d::Work> barrier(
      const c10d::BarrierOptions& opts) override;
  void monitoredBarrier(const c10d::BarrierOptions& opts,
                        bool wait_all_ranks) override;

 private:
  // Reduces host tensors in place across the group with `op`, including the
  // ops gloo lacks (AVG, PREMUL_SUM: a sum, scaled before or after).
  void reduce_on_host(std::vector<at::Tensor>& host_tensors,
                      const c10d::ReduceOp& op,
                      std::chrono::milliseconds timeout,
                      std::string_view caller);

  c10::intrusive_ptr<c10d::Backend> host_;
  // The last split, by group name: a group holds this backend for both cpu
  // and tpu, and ProcessGroup::splitGroup splits each device's backend.
  std::mutex split_mutex_;
  std::string last_split_name_;
  c10::intrusive_ptr<c10d::Backend> last_split_;
};

}  // namespace torch_tpu::distributed
