#include "aten/sparse_coo_ops.h"

#include <ATen/SparseTensorImpl.h>
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_sparse_coo_tensor_with_dims_and_tensors.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/repeat_interleave.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/stack.h>
#include <ATen/ops/tensor.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <tuple>
#include <vector>

namespace torch_tpu::aten::sparse {
namespace {

bool is_one(const at::Scalar& s) { return s.toComplexDouble() == 1.0; }
bool is_zero(const at::Scalar& s) { return s.toComplexDouble() == 0.0; }

// Each entry's position in the row-major order of the sparse dims: the key
// that sorting, merging and gathering use.
at::Tensor linear_index(const at::Tensor& indices, at::IntArrayRef sparse_sizes) {
  const int64_t sparse_dim = static_cast<int64_t>(sparse_sizes.size());
  if (sparse_dim == 0) return at::zeros({indices.size(1)}, indices.options());
  at::Tensor linear = indices.select(0, 0);
  for (int64_t d = 1; d < sparse_dim; ++d) linear = linear.mul(sparse_sizes[d]).add(indices.select(0, d));
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

// The dense tensor `t` (of the sparse tensor's shape) as [rows of the sparse
// dims, *dense sizes], the layout in which linear_index() addresses it.
at::Tensor rows_of(const at::Tensor& t, int64_t sparse_dim) {
  std::vector<int64_t> shape{1};
  for (int64_t d = 0; d < sparse_dim; ++d) shape[0] *= t.size(d);
  for (int64_t d = sparse_dim; d < t.dim(); ++d) shape.push_back(t.size(d));
  return t.reshape(shape);
}

at::Tensor make_sparse(at::IntArrayRef sizes, int64_t sparse_dim, const at::Tensor& indices,
                       const at::Tensor& values, bool coalesced) {
  const int64_t dense_dim = static_cast<int64_t>(sizes.size()) - sparse_dim;
  return at::_sparse_coo_tensor_with_dims_and_tensors(sparse_dim, dense_dim, sizes, indices, values,
                                                      values.options().layout(at::kSparse), coalesced);
}

// Makes the sparse tensor `out` hold `result` (out= and in-place forms).
at::Tensor& assign(at::Tensor& out, const at::Tensor& result) {
  auto* impl = static_cast<at::SparseTensorImpl*>(out.unsafeGetTensorImpl());
  impl->raw_resize_(result.sparse_dim(), result.dense_dim(), result.sizes());
  impl->set_indices_and_values_unsafe(result._indices(), result._values().to(out.scalar_type()));
  impl->set_coalesced(result.is_coalesced());
  return out;
}

at::ScalarType result_dtype(const char* op, const at::Tensor& a, const at::Tensor& b, const at::Tensor& out) {
  const at::ScalarType common = at::result_type(a, b);
  TORCH_CHECK(c10::canCast(common, out.scalar_type()), op, ": result type ", common,
              " can't be cast to the desired output type ", out.scalar_type());
  return common;
}

void check_same_sizes(const char* op, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sizes().equals(b.sizes()), op, ": expected 'self' and 'other' to have the same size, but self has size ",
              a.sizes(), " while other has size ", b.sizes(), " (sparse operands do not broadcast)");
}

}  // namespace

at::Tensor coalesce(const at::Tensor& self) {
  const int64_t sparse_dim = self.sparse_dim(), nnz = self._nnz();
  if (nnz < 2) {
    at::Tensor copy = self.clone();
    copy._coalesced_(true);
    return copy;
  }
  const at::Tensor indices = self._indices(), values = self._values();
  const at::IntArrayRef sparse_sizes = self.sizes().slice(0, sparse_dim);
  auto [unique, inverse, counts] = at::_unique2(linear_index(indices, sparse_sizes), /*sorted=*/true,
                                                /*return_inverse=*/true, /*return_counts=*/false);
  std::vector<int64_t> value_shape = values.sizes().vec();
  value_shape[0] = unique.size(0);
  at::Tensor summed = at::zeros(value_shape, values.options()).index_add_(0, inverse, values);
  return make_sparse(self.sizes(), sparse_dim, indices_of_linear(unique, sparse_sizes), summed, true);
}

at::Tensor& add_out(const at::Tensor& self, const at::Tensor& other, const at::Scalar& alpha, at::Tensor& out) {
  const char* op = "aten::add";
  TORCH_CHECK(other.is_sparse(), op, ": add(sparse, dense) is not supported; use add(dense, sparse) instead");
  check_same_sizes(op, self, other);
  const at::ScalarType dtype = result_dtype(op, self, other, out);
  const int64_t sparse_dim = other.sparse_dim();
  if (!self.is_sparse()) {
    TORCH_CHECK(!out.is_sparse(), op, ": the sum of a dense and a sparse tensor is dense, got a sparse out=");
    const at::Tensor linear = linear_index(other._indices(), other.sizes().slice(0, sparse_dim));
    const at::Tensor sum = rows_of(self.to(dtype), sparse_dim).index_add(0, linear, other._values().to(dtype), alpha);
    out.resize_(self.sizes());
    out.copy_(sum.view(self.sizes()));
    return out;
  }
  TORCH_CHECK(out.is_sparse(), op, ": the sum of two sparse tensors is sparse, got a dense out=");
  TORCH_CHECK(self.sparse_dim() == sparse_dim, op, ": expected 'self' and 'other' to have the same sparse dims, got ",
              self.sparse_dim(), " and ", sparse_dim);
  at::Tensor scaled = other._values().to(dtype);
  if (!is_one(alpha)) scaled = scaled.mul(alpha);
  // Concatenated, as CUDA does: the sum is coalesced when it is next needed so.
  const at::Tensor indices = at::cat({self._indices(), other._indices()}, 1);
  const at::Tensor values = at::cat({self._values().to(dtype), scaled}, 0);
  return assign(out, make_sparse(self.sizes(), sparse_dim, indices, values, false));
}

at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const char* op = "aten::mul";
  TORCH_CHECK(out.is_sparse(), op, ": a product with a sparse tensor is sparse, got a dense out=");
  const at::ScalarType dtype = result_dtype(op, self, other, out);
  if (self.is_sparse() && other.is_sparse()) {
    check_same_sizes(op, self, other);
    TORCH_CHECK(self.sparse_dim() == other.sparse_dim(), op,
                ": expected 'self' and 'other' to have the same sparse dims, got ", self.sparse_dim(), " and ",
                other.sparse_dim());
    const at::Tensor a = self.coalesce(), b = other.coalesce();
    const int64_t sparse_dim = a.sparse_dim();
    const at::IntArrayRef sparse_sizes = a.sizes().slice(0, sparse_dim);
    if (a._nnz() == 0 || b._nnz() == 0) {
      std::vector<int64_t> value_shape = a._values().sizes().vec();
      value_shape[0] = 0;
      return assign(out, make_sparse(a.sizes(), sparse_dim, at::empty({sparse_dim, 0}, a._indices().options()),
                                     at::empty(value_shape, a._values().options().dtype(dtype)), true));
    }
    // Both sorted by linear index: each of b's entries looks its index up in a's.
    const at::Tensor la = linear_index(a._indices(), sparse_sizes), lb = linear_index(b._indices(), sparse_sizes);
    const at::Tensor at_a = at::searchsorted(la, lb).clamp_max(a._nnz() - 1);
    const at::Tensor common = la.index_select(0, at_a).eq(lb).nonzero().squeeze(1);
    const at::Tensor values = a._values().to(dtype).index_select(0, at_a.index_select(0, common))
                                  .mul(b._values().to(dtype).index_select(0, common));
    return assign(out, make_sparse(a.sizes(), sparse_dim, b._indices().index_select(1, common), values, true));
  }
  const at::Tensor& s = self.is_sparse() ? self : other;
  const at::Tensor& d = self.is_sparse() ? other : self;
  const int64_t sparse_dim = s.sparse_dim();
  at::Tensor factor;
  if (d.dim() == 0) {
    factor = d.to(s._values().device(), dtype);
  } else {
    TORCH_CHECK(d.dim() <= s.dim() && at::infer_size(d.sizes(), s.sizes()) == s.sizes(), op,
                ": a dense operand must broadcast to the sparse operand's shape ", s.sizes(), ", got ", d.sizes());
    const at::Tensor linear = linear_index(s._indices(), s.sizes().slice(0, sparse_dim));
    factor = rows_of(d.to(dtype).expand(s.sizes()), sparse_dim).index_select(0, linear);
  }
  const at::Tensor values = s._values().to(dtype).mul(factor);
  return assign(out, make_sparse(s.sizes(), sparse_dim, s._indices().clone(), values, s.is_coalesced()));
}

namespace {

at::Tensor sparse_times_dense(const char* op, const at::Tensor& sparse, const at::Tensor& dense) {
  TORCH_CHECK(sparse.is_sparse() && sparse.sparse_dim() == 2 && sparse.dense_dim() == 0, op,
              ": expected a 2-D sparse matrix without dense dims as mat1, got sparse_dim ", sparse.sparse_dim(),
              " and dense_dim ", sparse.dense_dim());
  TORCH_CHECK(!dense.is_sparse() && dense.dim() == 2, op, ": expected a 2-D dense matrix as mat2, got ",
              dense.sizes());
  TORCH_CHECK(sparse.size(1) == dense.size(0), op, ": mat1 and mat2 shapes cannot be multiplied (", sparse.size(0),
              "x", sparse.size(1), " and ", dense.size(0), "x", dense.size(1), ")");
  TORCH_CHECK(sparse.scalar_type() == dense.scalar_type(), op, ": expected mat1 and mat2 to have the same dtype, got ",
              sparse.scalar_type(), " and ", dense.scalar_type());
  const at::Tensor indices = sparse._indices();
  const at::Tensor rows = dense.index_select(0, indices.select(0, 1)).mul(sparse._values().unsqueeze(1));
  return at::zeros({sparse.size(0), dense.size(1)}, dense.options()).index_add_(0, indices.select(0, 0), rows);
}

}  // namespace

at::Tensor addmm(const at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  const char* op = "aten::addmm";
  at::Tensor product = sparse_times_dense(op, sparse, dense);
  TORCH_CHECK(self.scalar_type() == product.scalar_type(), op, ": expected self and mat2 to have the same dtype, got ",
              self.scalar_type(), " and ", product.scalar_type());
  if (!is_one(alpha)) product = product.mul(alpha);
  if (is_zero(beta)) return product;  // self is ignored, NaNs included, as for dense addmm
  const at::Tensor base = self.expand(product.sizes());
  return is_one(beta) ? base.add(product) : base.mul(beta).add(product);
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  const at::Tensor result = sparse::addmm(self, sparse, dense, beta, alpha);
  out.resize_(result.sizes());
  out.copy_(result);
  return out;
}

at::Tensor& addmm_(at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  const at::Tensor result = sparse::addmm(self, sparse, dense, beta, alpha);
  TORCH_CHECK(self.sizes().equals(result.sizes()), "aten::addmm_: self of size ", self.sizes(),
              " cannot hold the product of size ", result.sizes());
  self.copy_(result);
  return self;
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  const char* op = "aten::index_select";
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(index.dim() <= 1, op, ": index must be a vector, got ", index.dim(), " dims");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, op,
              ": expected an index of dtype int64 or int32, got ", index.scalar_type());
  const at::Tensor wanted = index.reshape({-1}).to(self._indices().device(), at::kLong);
  const int64_t size = self.size(dim), count = wanted.numel();
  if (count > 0) {
    TORCH_CHECK_INDEX(wanted.lt(0).logical_or(wanted.ge(size)).any().item<bool>() == false, op,
                      ": index out of range for dim ", dim, " of size ", size);
  }
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = count;
  const int64_t sparse_dim = self.sparse_dim();
  if (dim >= sparse_dim) {
    return make_sparse(sizes, sparse_dim, self._indices().clone(),
                       self._values().index_select(dim - sparse_dim + 1, wanted), self.is_coalesced());
  }
  // Entry i is selected once for each position j with index[j] == its index
  // along dim: look each entry's index up in the sorted index, then expand
  // each entry into its run of equal index values.
  const at::Tensor along = self._indices().select(0, dim);
  auto [sorted, order] = wanted.sort();
  const at::Tensor first = at::searchsorted(sorted, along);
  const at::Tensor runs = at::searchsorted(sorted, along, /*out_int32=*/false, /*right=*/true).sub(first);
  const at::Tensor entry = at::repeat_interleave(runs);
  const at::Tensor run_start = runs.cumsum(0).sub(runs).index_select(0, entry);
  const at::Tensor within = at::arange(entry.size(0), entry.options()).sub(run_start);
  const at::Tensor position = order.index_select(0, first.index_select(0, entry).add(within));
  at::Tensor indices = self._indices().index_select(1, entry);
  indices.select(0, dim).copy_(position);
  return make_sparse(sizes, sparse_dim, indices, self._values().index_select(0, entry), false);
}

at::Tensor sum_backward(const at::Tensor& grad, const at::Tensor& input_in, at::IntArrayRef dims) {
  const char* op = "aten::_sparse_sum_backward";
  TORCH_CHECK(input_in.is_sparse(), op, ": expected a sparse input");
  const at::Tensor input = input_in.coalesce();
  const int64_t sparse_dim = input.sparse_dim(), nnz = input._nnz();
  std::vector<bool> summed(input.dim(), false);
  for (int64_t d : dims) summed[at::maybe_wrap_dim(d, input.dim())] = true;
  std::vector<int64_t> kept_dims, kept_sizes;
  for (int64_t d = 0; d < sparse_dim; ++d) {
    if (!summed[d]) {
      kept_dims.push_back(d);
      kept_sizes.push_back(input.size(d));
    }
  }
  const at::Tensor indices = input._indices();
  // g: [nnz, *the dense dims that were not summed]
  at::Tensor g;
  if (kept_dims.empty()) {
    TORCH_CHECK(!grad.is_sparse(), op, ": a sum over every sparse dim has a dense gradient, got a sparse one");
    std::vector<int64_t> shape{nnz};
    shape.insert(shape.end(), grad.sizes().begin(), grad.sizes().end());
    g = grad.unsqueeze(0).expand(shape);
  } else {
    TORCH_CHECK(grad.is_sparse() && grad.sparse_dim() == static_cast<int64_t>(kept_dims.size()), op,
                ": expected a sparse gradient with ", kept_dims.size(), " sparse dims");
    const at::Tensor summed_grad = grad.coalesce();
    const int64_t grad_nnz = summed_grad._nnz();
    std::vector<int64_t> shape = summed_grad._values().sizes().vec();
    shape[0] = nnz;
    if (grad_nnz == 0 || nnz == 0) {
      g = at::zeros(shape, summed_grad._values().options());
    } else {
      // Each entry looks its kept indices up among the gradient's (sorted).
      const at::Tensor kept = at::tensor(kept_dims, indices.options().device(c10::kCPU)).to(indices.device());
      const at::Tensor at_grad = linear_index(summed_grad._indices(), kept_sizes);
      const at::Tensor wanted = linear_index(indices.index_select(0, kept), kept_sizes);
      const at::Tensor position = at::searchsorted(at_grad, wanted).clamp_max(grad_nnz - 1);
      std::vector<int64_t> mask_shape(shape.size(), 1);
      mask_shape[0] = nnz;
      const at::Tensor found = at_grad.index_select(0, position).eq(wanted).view(mask_shape);
      const at::Tensor gathered = summed_grad._values().index_select(0, position);
      g = gathered.masked_fill(found.logical_not(), 0);
    }
  }
  for (int64_t d = sparse_dim; d < input.dim(); ++d) {
    if (summed[d]) g = g.unsqueeze(d - sparse_dim + 1);
  }
  return make_sparse(input.sizes(), sparse_dim, indices.clone(), g.expand(input._values().sizes()).contiguous(), true);
}

}  // namespace torch_tpu::aten::sparse
