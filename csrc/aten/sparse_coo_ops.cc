// Coalescing, sums and products with sparse operands, index_select and the
// gradient of a sum, for sparse COO tpu tensors.
#include "aten/sparse_coo_ops.h"

#include <ATen/ExpandUtils.h>
#include <ATen/DeviceGuard.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "aten/sparse_coo_util.h"

namespace torch_tpu::aten::sparse {
namespace {

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

void check_same_sparse_dims(const char* op, const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK(a.sparse_dim() == b.sparse_dim(), op, ": expected 'self' and 'other' to have the same sparse dims, got ",
              a.sparse_dim(), " and ", b.sparse_dim());
}

}  // namespace

at::Tensor coalesce(const at::Tensor& self) {
  const at::OptionalDeviceGuard guard(at::device_of(self));
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
  const at::OptionalDeviceGuard guard(at::device_of(other));
  const char* op = "aten::add";
  TORCH_CHECK(other.is_sparse(), op, ": add(sparse, dense) is not supported; use add(dense, sparse) instead");
  check_same_sizes(op, self, other);
  const at::ScalarType dtype = result_dtype(op, self, other, out);
  const int64_t sparse_dim = other.sparse_dim();
  if (!self.is_sparse()) {
    TORCH_CHECK(!out.is_sparse(), op, ": the sum of a dense and a sparse tensor is dense, got a sparse out=");
    const at::Tensor linear = linear_index(other._indices(), other.sizes().slice(0, sparse_dim));
    if (out.is_same(self) && self.is_contiguous() && self.scalar_type() == dtype) {
      // dense.add_(sparse), an optimizer's step: only the touched rows are
      // written (through a view of the table), not a new table.
      rows_of(out, sparse_dim).index_add_(0, linear, other._values().to(dtype), alpha);
      return out;
    }
    const at::Tensor sum = rows_of(self.to(dtype), sparse_dim).index_add(0, linear, other._values().to(dtype), alpha);
    return write_into(out, sum.view(self.sizes()));
  }
  TORCH_CHECK(out.is_sparse(), op, ": the sum of two sparse tensors is sparse, got a dense out=");
  check_same_sparse_dims(op, self, other);
  at::Tensor scaled = other._values().to(dtype);
  if (alpha.toComplexDouble() != 1.0) scaled = scaled.mul(alpha);
  // Concatenated, as CUDA does: the sum is coalesced when it is next needed so.
  const at::Tensor indices = at::cat({self._indices(), other._indices()}, 1);
  const at::Tensor values = at::cat({self._values().to(dtype), scaled}, 0);
  return assign(out, make_sparse(self.sizes(), sparse_dim, indices, values, false));
}

at::Tensor& mul_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const at::OptionalDeviceGuard guard(at::device_of(out));
  const char* op = "aten::mul";
  TORCH_CHECK(out.is_sparse(), op, ": a product with a sparse tensor is sparse, got a dense out=");
  const at::ScalarType dtype = result_dtype(op, self, other, out);
  if (self.is_sparse() && other.is_sparse()) {
    check_same_sizes(op, self, other);
    check_same_sparse_dims(op, self, other);
    const at::Tensor a = self.coalesce(), b = other.coalesce();
    const int64_t sparse_dim = a.sparse_dim();
    if (a._nnz() == 0 || b._nnz() == 0) {
      std::vector<int64_t> value_shape = a._values().sizes().vec();
      value_shape[0] = 0;
      return assign(out, make_sparse(a.sizes(), sparse_dim, at::empty({sparse_dim, 0}, a._indices().options()),
                                     at::empty(value_shape, a._values().options().dtype(dtype)), true));
    }
    // Both sorted by linear index: each of b's entries looks its index up in a's.
    const at::IntArrayRef sparse_sizes = a.sizes().slice(0, sparse_dim);
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

at::Tensor sparse_mask(const at::Tensor& self, const at::Tensor& mask) {
  const at::OptionalDeviceGuard guard(at::device_of(mask));
  const char* op = "aten::sparse_mask";
  TORCH_CHECK(mask.is_sparse(), op, ": expected a sparse COO mask");
  TORCH_CHECK(self.sizes().equals(mask.sizes()), op, ": expected self and mask to have the same size, got ",
              self.sizes(), " and ", mask.sizes());
  const int64_t sparse_dim = mask.sparse_dim();
  const at::IntArrayRef sparse_sizes = mask.sizes().slice(0, sparse_dim);
  const at::Tensor linear = linear_index(mask._indices(), sparse_sizes);
  at::Tensor values;
  if (self.is_sparse()) {
    check_same_sparse_dims(op, self, mask);
    values = values_at(self.coalesce(), linear, sparse_sizes);
  } else {
    values = rows_of(self, sparse_dim).index_select(0, linear);
  }
  return make_sparse(mask.sizes(), sparse_dim, mask._indices().clone(), values, mask.is_coalesced());
}

at::Tensor mask_projection(const at::Tensor& self, const at::Tensor& mask, bool) {
  const at::OptionalDeviceGuard guard(at::device_of(self));
  // self's entries take mask's values at their indices (mask's repeated
  // indices summed, as accumulate_matches asks; without it CPU takes one of
  // them), zero where mask has none.
  const char* op = "aten::_sparse_mask_projection";
  TORCH_CHECK(self.is_sparse() && mask.is_sparse(), op, ": expected two sparse COO tensors");
  TORCH_CHECK(self.sizes().equals(mask.sizes()), op, ": expected self and mask to have the same size, got ",
              self.sizes(), " and ", mask.sizes());
  check_same_sparse_dims(op, self, mask);
  const int64_t sparse_dim = self.sparse_dim();
  const at::IntArrayRef sparse_sizes = self.sizes().slice(0, sparse_dim);
  const at::Tensor values =
      values_at(mask.coalesce(), linear_index(self._indices(), sparse_sizes), sparse_sizes).to(self.scalar_type());
  return make_sparse(self.sizes(), sparse_dim, self._indices().clone(), values, self.is_coalesced());
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  const at::OptionalDeviceGuard guard(at::device_of(self));
  const char* op = "aten::index_select";
  dim = at::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(index.dim() <= 1, op, ": index must be a vector, got ", index.dim(), " dims");
  TORCH_CHECK(index.scalar_type() == at::kLong || index.scalar_type() == at::kInt, op,
              ": expected an index of dtype int64 or int32, got ", index.scalar_type());
  const at::Tensor wanted = index.reshape({-1}).to(self._indices().device(), at::kLong);
  const int64_t size = self.size(dim), count = wanted.numel();
  if (count > 0) {
    TORCH_CHECK_INDEX(!wanted.lt(0).logical_or(wanted.ge(size)).any().item<bool>(), op,
                      ": index out of range for dim ", dim, " of size ", size);
  }
  std::vector<int64_t> sizes = self.sizes().vec();
  sizes[dim] = count;
  const int64_t sparse_dim = self.sparse_dim();
  if (dim >= sparse_dim) {
    return make_sparse(sizes, sparse_dim, self._indices().clone(),
                       self._values().index_select(dim - sparse_dim + 1, wanted), self.is_coalesced());
  }
  // Entry i is selected once for each position j with index[j] equal to
  // its index along dim.
  auto [sorted, order] = wanted.sort();
  auto [entry, match] = equal_pairs(sorted, self._indices().select(0, dim));
  at::Tensor indices = self._indices().index_select(1, entry);
  indices.select(0, dim).copy_(order.index_select(0, match));
  return make_sparse(sizes, sparse_dim, indices, self._values().index_select(0, entry), false);
}

at::Tensor sum_backward(const at::Tensor& grad, const at::Tensor& input_in, at::IntArrayRef dims) {
  const at::OptionalDeviceGuard guard(at::device_of(input_in));
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
  at::Tensor g;  // [nnz, *the dense dims that were not summed]
  if (kept_dims.empty()) {
    TORCH_CHECK(!grad.is_sparse(), op, ": a sum over every sparse dim has a dense gradient, got a sparse one");
    std::vector<int64_t> shape{nnz};
    shape.insert(shape.end(), grad.sizes().begin(), grad.sizes().end());
    g = grad.unsqueeze(0).expand(shape);
  } else {
    TORCH_CHECK(grad.is_sparse() && grad.sparse_dim() == static_cast<int64_t>(kept_dims.size()), op,
                ": expected a sparse gradient with ", kept_dims.size(), " sparse dims");
    g = values_at(grad.coalesce(), linear_index_over(input, kept_dims), kept_sizes);
  }
  for (int64_t d = sparse_dim; d < input.dim(); ++d) {
    if (summed[d]) g = g.unsqueeze(d - sparse_dim + 1);
  }
  return make_sparse(input.sizes(), sparse_dim, indices.clone(), g.expand(input._values().sizes()).contiguous(), true);
}

}  // namespace torch_tpu::aten::sparse
