// all_reduce of sparse COO tpu tensors: c10d's op dispatches on the
// tensors' key, and PyTorch registers its sparse form for SparseCPU and
// SparseCUDA only, so DDP's sparse gradients (nn.Embedding(sparse=True))
// reached no kernel. This is PyTorch's registration for the tpu backend.
#include <torch/csrc/distributed/c10d/ProcessGroup.hpp>
#include <torch/library.h>

#include <chrono>
#include <optional>
#include <tuple>
#include <vector>

namespace torch_tpu::distributed {
namespace {

std::tuple<std::vector<at::Tensor>, c10::intrusive_ptr<c10d::Work>> allreduce_sparse(
    at::TensorList tensors, const c10::intrusive_ptr<c10d::ProcessGroup>& process_group,
    const c10::intrusive_ptr<c10d::ReduceOp>& reduce_op, const std::optional<at::Tensor>& sparse_indices,
    bool async_op, int64_t timeout) {
  std::vector<at::Tensor> tensor_vec = tensors.vec();
  c10d::AllreduceOptions opts;
  opts.reduceOp = *reduce_op;
  opts.timeout = std::chrono::milliseconds(timeout);
  opts.asyncOp = async_op;
  opts.sparseIndices = sparse_indices;
  auto work = process_group->getBackend(c10::DeviceType::PrivateUse1)->allreduce_sparse(tensor_vec, opts);
  return {std::move(tensor_vec), std::move(work)};
}

}  // namespace

TORCH_LIBRARY_IMPL(c10d, SparsePrivateUse1, m) {
  m.impl("allreduce_", allreduce_sparse);
}

}  // namespace torch_tpu::distributed
