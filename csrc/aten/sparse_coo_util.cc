#include "aten/sparse_coo_util.h"

#include <ATen/SparseTensorImpl.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/zeros.h>

#include <cstdint>
#include <vector>

namespace torch_tpu::aten::sparse {

at::Tensor linear_index(const at::Tensor& indices, at::IntArrayRef sparse_sizes) {
  const int64_t sparse_dim = static_cast<int64_t>(sparse_sizes.size());
  if (sparse_dim == 0) return at::zeros({indices.size(1)}, indices.options());
  at::Tensor linear = indices.select(0, 0);
  for (int64_t d = 1; d < sparse_dim; ++d) linear = linear.mul(sparse_sizes[d]).add(indices.select(0, d));
  return linear;
}

at::Tensor linear_index_over(const at::Tensor& sparse, at::IntArrayRef dims) {
  const at::Tensor indices = sparse._indices();
  if (dims.empty()) return at::zeros({indices.size(1)}, indices.options());
  at::Tensor linear = indices.select(0, dims[0]);
  for (size_t i = 1; i < dims.size(); ++i) linear = linear.mul(sparse.size(dims[i])).add(indices.select(0, dims[i]));
  return linear;
}

at::Tensor indices_of_linear(const at::Tensor& linear, at::IntArrayRef sparse_sizes) {
  const int64_t sparse_dim = static_cast<int64_t>(sparse_sizes.size());
  if (sparse_dim == 0) return at::empty({0, linear.size(0)}, linear.options());
  std::vector<at::Tensor> rows(sparse_dim);
  at::Tensor rest = linear;
  for (int64_t d = sparse_dim - 1; d > 0; --d) {
    rows[d] = rest.remainder(sparse_sizes[d]);
    rest = rest.div(sparse_sizes[d], "floor");
  }
  rows[0] = rest;
  return at::stack(rows, 0);
}

at::Tensor rows_of(const at::Tensor& t, int64_t sparse_dim) {
  std::vector<int64_t> shape{1};
  for (int64_t d = 0; d < sparse_dim; ++d) shape[0] *= t.size(d);
  for (int64_t d = sparse_dim; d < t.dim(); ++d) shape.push_back(t.size(d));
  return t.reshape(shape);
}

at::Tensor make_sparse(at::IntArrayRef sizes, int64_t sparse_dim, const at::Tensor& indices, const at::Tensor& values,
                       bool coalesced) {
  const int64_t dense_dim = static_cast<int64_t>(sizes.size()) - sparse_dim;
  return at::_sparse_coo_tensor_with_dims_and_tensors(sparse_dim, dense_dim, sizes, indices, values,
                                                      values.options().layout(at::kSparse), coalesced);
}

at::Tensor& assign(at::Tensor& out, const at::Tensor& result) {
  auto* impl = static_cast<at::SparseTensorImpl*>(out.unsafeGetTensorImpl());
  impl->raw_resize_(result.sparse_dim(), result.dense_dim(), result.sizes());
  impl->set_indices_and_values_unsafe(result._indices(), result._values().to(out.scalar_type()));
  impl->set_coalesced(result.is_coalesced());
  return out;
}

at::Tensor& write_into(at::Tensor& out, const at::Tensor& result) {
  out.resize_(result.sizes());
  out.copy_(result);
  return out;
}

std::pair<at::Tensor, at::Tensor> equal_pairs(const at::Tensor& sorted, const at::Tensor& queries) {
  const at::Tensor first = at::searchsorted(sorted, queries);
  const at::Tensor runs = at::searchsorted(sorted, queries, /*out_int32=*/false, /*right=*/true).sub(first);
  const at::Tensor query = at::repeat_interleave(runs);  // reads the total back
  const at::Tensor run_start = runs.cumsum(0).sub(runs).index_select(0, query);
  const at::Tensor within = at::arange(query.size(0), query.options()).sub(run_start);
  return {query, first.index_select(0, query).add(within)};
}

at::Tensor values_at(const at::Tensor& source, const at::Tensor& linear, at::IntArrayRef sparse_sizes) {
  const at::Tensor values = source._values();
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = linear.size(0);
  const int64_t count = source._nnz();
  if (count == 0 || linear.size(0) == 0) return at::zeros(shape, values.options());
  const at::Tensor keys = linear_index(source._indices(), sparse_sizes);
  const at::Tensor position = at::searchsorted(keys, linear).clamp_max(count - 1);
  std::vector<int64_t> mask_shape(shape.size(), 1);
  mask_shape[0] = linear.size(0);
  const at::Tensor found = keys.index_select(0, position).eq(linear).view(mask_shape);
  return values.index_select(0, position).masked_fill(found.logical_not(), 0);
}

}  // namespace torch_tpu::aten::sparse
