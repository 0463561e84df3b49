// The sparse COO kernels that PyTorch writes once per device (CPU, CUDA,
// MPS) and that tpu therefore needs of its own. A sparse COO tpu tensor is
// PyTorch's SparseTensorImpl over two dense tpu tensors, its indices
// [sparse_dim, nnz] and values [nnz, *dense_sizes]: each kernel here is a
// few dense ATen ops on those, so it runs through the ordinary tpu
// lowerings in every eager mode. Defined in sparse_coo_ops.cc (below, up to
// the matrix products), sparse_coo_matmul.cc and sparse_coo_softmax.cc;
// registered in register_sparse.cc.
#pragma once

#include <ATen/core/Tensor.h>

namespace torch_tpu::aten::sparse {

// Sums the values of repeated indices and sorts the indices (aten::_coalesce).
at::Tensor coalesce(const at::Tensor& self);

// dense + alpha * sparse -> dense, sparse + alpha * sparse -> sparse.
at::Tensor& add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out);

// Products with a sparse operand: by a 0-dim tensor, by a dense tensor that
// broadcasts to the sparse one's shape (the result keeps the sparse
// operand's indices), and of two sparse tensors (their common indices).
at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out);

// `self` (dense or sparse) at the entries of `mask`, zero where a sparse
// self has none.
at::Tensor sparse_mask(const at::Tensor& self, const at::Tensor& mask);
// `mask`'s values at the entries of `self` (both sparse).
at::Tensor mask_projection(const at::Tensor& self, const at::Tensor& mask, bool accumulate_matches);

// Matrix products (sparse_coo_matmul.cc).
// beta * self + alpha * (sparse [n, k] @ dense [k, m]).
at::Tensor addmm(const at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense, const at::Scalar& beta,
                 const at::Scalar& alpha);
at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out);
at::Tensor& addmm_(at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense, const at::Scalar& beta,
                   const at::Scalar& alpha);

// sparse [b, n, k] @ dense [b, k, m] -> dense [b, n, m].
at::Tensor bmm(const at::Tensor& sparse, const at::Tensor& dense);
at::Tensor& bmm_out(const at::Tensor& sparse, const at::Tensor& dense, at::Tensor& out);
// sparse [n, k] @ sparse [k, m] -> coalesced sparse [n, m].
at::Tensor sparse_sparse_matmul(const at::Tensor& a, const at::Tensor& b);

// softmax and log_softmax along `dim`, and their gradients (sparse_coo_softmax.cc).
at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float);
at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim, const at::Tensor& self);
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                const at::Tensor& self);

// The entries of `self` whose index along `dim` is one of `index`, in
// `index`'s order (an index named twice selects its entries twice).
at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index);

// The gradient of _sparse_sum(input, dims): each of input's entries takes
// the gradient of the sum it went into.
at::Tensor sum_backward(const at::Tensor& grad, const at::Tensor& input, at::IntArrayRef dims);

}  // namespace torch_tpu::aten::sparse
