// ATen glue for embedding_bag (nn.EmbeddingBag, F.embedding_bag) and its
// gradients; the lowerings are in csrc/ops/nn/embedding_bag.cc.
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/_embedding_bag_sparse_backward.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/op_runner.h"
#include "ops/indexing/gather_scatter.h"
#include "ops/nn/embedding_bag.h"

namespace torch_tpu::aten {

namespace {

using Result = std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor>;

void append_int(std::string& key, int64_t v) { key.append(std::to_string(v)).push_back(','); }

ops::BagMode bag_mode(int64_t mode) {
  TORCH_CHECK(mode >= 0 && mode <= 2, "embedding_bag: mode must be 0 (sum), 1 (mean) or 2 (max), got ", mode);
  return static_cast<ops::BagMode>(mode);
}

const at::Tensor* present(const std::optional<at::Tensor>& t) {
  return t.has_value() && t->defined() ? &*t : nullptr;
}

Result embedding_bag(const at::Tensor& weight, const at::Tensor& indices, const at::Tensor& offsets,
                     bool scale_grad_by_freq, int64_t mode, bool sparse,
                     const std::optional<at::Tensor>& per_sample_weights, bool include_last_offset,
                     int64_t padding_idx) {
  const ops::BagMode m = bag_mode(mode);
  TORCH_CHECK(weight.dim() == 2, "embedding_bag: weight has to be a 2D Tensor, but got Tensor of dimension ",
              weight.dim());
  TORCH_CHECK(indices.dim() == 1, "embedding_bag: input has to be a 1D Tensor, but got Tensor of dimension ",
              indices.dim());
  TORCH_CHECK(offsets.dim() == 1, "embedding_bag: offsets has to be a 1D Tensor, but got Tensor of dimension ",
              offsets.dim());
  at::checkScalarTypes("embedding_bag", {indices, "indices", 2}, {at::kLong, at::kInt});
  at::checkScalarTypes("embedding_bag", {offsets, "offsets", 3}, {at::kLong, at::kInt});
  TORCH_CHECK(indices.scalar_type() == offsets.scalar_type(), "embedding_bag: expected indices and offsets "
              "to have the same dtype, got ", indices.scalar_type(), " and ", offsets.scalar_type());
  TORCH_CHECK(c10::isFloatingType(weight.scalar_type()), "embedding_bag: expected a floating-point weight, got ",
              weight.scalar_type());
  TORCH_CHECK(!include_last_offset || offsets.size(0) >= 1,
              "embedding_bag: include_last_offset needs at least one offset");
  const at::Tensor* psw = present(per_sample_weights);
  if (psw) {
    TORCH_CHECK(m == ops::BagMode::kSum, "embedding_bag: per_sample_weights is only supported for mode='sum'");
    TORCH_CHECK(psw->dim() == 1 && psw->size(0) == indices.size(0),
                "embedding_bag: expected per_sample_weights to be 1D with the size of input, got ", psw->sizes());
    TORCH_CHECK(psw->scalar_type() == weight.scalar_type(), "embedding_bag: expected per_sample_weights of dtype ",
                weight.scalar_type(), ", got ", psw->scalar_type());
  }
  // padding_idx arrives normalized (F.embedding_bag wraps negative values); -1 means none.
  const int64_t rows = weight.size(0);

  std::string key;
  append_int(key, mode);
  append_int(key, include_last_offset);
  append_int(key, padding_idx);
  append_int(key, psw != nullptr);
  OpCall call{"aten::_embedding_bag", std::move(key), {weight, indices, offsets}, {}};
  if (psw) call.tensors.push_back(*psw);
  const int64_t n_offsets = offsets.size(0), n_indices = indices.size(0);
  auto outs = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> weights;
    if (t.size() > 3) weights = t[3];
    auto r = ops::lower_embedding_bag(b, t[0], t[1], t[2], weights, m, include_last_offset, padding_idx);
    hlo::Value bad_index = ops::index_out_of_range(b, t[1], rows, false);
    std::vector<hlo::Value> results{r.output, r.offset2bag, r.bag_size, r.max_indices, bad_index};
    if (n_offsets > 0) {  // CPU's bounds on the bags (from 0, within the input), when the indices are fine
      const hlo::TensorType one(t[2].dtype(), {});
      hlo::Value first = b.reshape(b.slice(t[2], {0}, {1}, {1}), {});
      hlo::Value last = b.reshape(b.slice(t[2], {n_offsets - 1}, {n_offsets}, {1}), {});
      hlo::Value bad_offsets = b.or_(b.compare(first, b.constant_splat_int(0, one), "NE"),
                                     b.compare(last, b.constant_splat_int(n_indices, one), "GT"));
      results.push_back(b.and_(b.not_(bad_index), bad_offsets));
    }
    return results;
  });
  defer_check(outs[4], CheckError::kIndex, "embedding_bag: index out of range in self");
  if (n_offsets > 0) {
    defer_check(outs[5], CheckError::kRuntime,
                "embedding_bag: offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start "
                "from position 0, and offsets[-1] can not be greater than input's length " +
                    std::to_string(n_indices));
  }
  return {outs[0], outs[1], outs[2], outs[3]};
}

at::Tensor dense_backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offset2bag,
                          const at::Tensor& bag_size, const at::Tensor& max_indices, c10::SymInt num_weights,
                          bool scale_grad_by_freq, int64_t mode, const std::optional<at::Tensor>& per_sample_weights,
                          int64_t padding_idx) {
  const ops::BagMode m = bag_mode(mode);
  const int64_t n_weights = num_weights.expect_int();
  TORCH_CHECK(grad.dim() == 2, "embedding_bag_backward: expected a 2D grad, got ", grad.sizes());
  std::string key;
  append_int(key, mode);
  append_int(key, n_weights);
  append_int(key, scale_grad_by_freq);
  append_int(key, padding_idx);
  const at::Tensor* psw = present(per_sample_weights);
  append_int(key, psw != nullptr);
  OpCall call{"aten::_embedding_bag_dense_backward", std::move(key),
              {grad, indices, offset2bag, bag_size, max_indices}, {}};
  if (psw) call.tensors.push_back(*psw);
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> weights;
    if (t.size() > 5) weights = t[5];
    return std::vector<hlo::Value>{ops::lower_embedding_bag_backward(b, t[0], t[1], t[2], t[3], t[4], n_weights,
                                                                     scale_grad_by_freq, m, weights, padding_idx)};
  }).at(0);
}

at::Tensor backward(const at::Tensor& grad, const at::Tensor& indices, const at::Tensor& offsets,
                    const at::Tensor& offset2bag, const at::Tensor& bag_size, const at::Tensor& max_indices,
                    c10::SymInt num_weights, bool scale_grad_by_freq, int64_t mode, bool sparse,
                    const std::optional<at::Tensor>& per_sample_weights, int64_t padding_idx) {
  if (sparse) {
    // PyTorch's composite: the bags' gradients spread to their indices, as a
    // sparse COO gradient (register_sparse.cc).
    return at::_embedding_bag_sparse_backward_symint(grad, indices, offsets, offset2bag, bag_size,
                                                     std::move(num_weights), scale_grad_by_freq, mode,
                                                     per_sample_weights, padding_idx);
  }
  return dense_backward(grad, indices, offset2bag, bag_size, max_indices, std::move(num_weights),
                        scale_grad_by_freq, mode, per_sample_weights, padding_idx);
}

at::Tensor per_sample_weights_backward(const at::Tensor& grad, const at::Tensor& weight, const at::Tensor& indices,
                                       const at::Tensor& offsets, const at::Tensor& offset2bag, int64_t mode,
                                       int64_t padding_idx) {
  TORCH_CHECK(bag_mode(mode) == ops::BagMode::kSum,
              "embedding_bag_backward: per_sample_weights only supported for mode='sum'");
  std::string key;
  append_int(key, padding_idx);
  OpCall call{"aten::_embedding_bag_per_sample_weights_backward", std::move(key),
              {grad, weight, indices, offset2bag}, {}};
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{
        ops::lower_embedding_bag_per_sample_weights_backward(b, t[0], t[1], t[2], t[3], padding_idx)};
  }).at(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_embedding_bag", embedding_bag);
  m.impl("_embedding_bag_forward_only", embedding_bag);
  m.impl("_embedding_bag_backward", backward);
  m.impl("_embedding_bag_dense_backward", dense_backward);
  m.impl("_embedding_bag_per_sample_weights_backward", per_sample_weights_backward);
}

}  // namespace torch_tpu::aten
