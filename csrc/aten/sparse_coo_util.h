// What the sparse COO kernels (sparse_coo_*.cc) share: addressing a COO
// tensor's entries by their row-major linear index, and making results.
#pragma once

#include <ATen/core/Tensor.h>

#include <utility>

namespace torch_tpu::aten::sparse {

// Each entry's position in the row-major order of the given sparse sizes:
// indices [len(sparse_sizes), nnz] -> [nnz]. Coalesced tensors are sorted by it.
at::Tensor linear_index(const at::Tensor& indices, at::IntArrayRef sparse_sizes);
// Each entry of the sparse tensor `sparse` numbered over only the sparse
// dims `dims` (ascending): entries that agree on those dims get one number.
at::Tensor linear_index_over(const at::Tensor& sparse, at::IntArrayRef dims);
// The inverse of linear_index: [n] -> [len(sparse_sizes), n].
at::Tensor indices_of_linear(const at::Tensor& linear, at::IntArrayRef sparse_sizes);

// The dense tensor `t`, of a sparse tensor's shape, as [rows of the first
// sparse_dim dims, *the rest]: the rows linear_index() numbers.
at::Tensor rows_of(const at::Tensor& t, int64_t sparse_dim);

at::Tensor make_sparse(at::IntArrayRef sizes, int64_t sparse_dim, const at::Tensor& indices, const at::Tensor& values,
                       bool coalesced);

// Makes the sparse tensor `out` hold `result` (out= and in-place forms).
at::Tensor& assign(at::Tensor& out, const at::Tensor& result);
// The same for a dense `out` and dense `result`.
at::Tensor& write_into(at::Tensor& out, const at::Tensor& result);

// Every pair (i, p) with sorted[p] == queries[i], ordered by i then p, as
// two index vectors: each query expanded into its run of equal keys.
std::pair<at::Tensor, at::Tensor> equal_pairs(const at::Tensor& sorted, const at::Tensor& queries);

// The values of the coalesced sparse tensor `source` at the given linear
// indices (numbered over `sparse_sizes`), zero where it has no entry:
// [len(linear), *source's dense sizes].
at::Tensor values_at(const at::Tensor& source, const at::Tensor& linear, at::IntArrayRef sparse_sizes);

}  // namespace torch_tpu::aten::sparse
