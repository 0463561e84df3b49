// Matrix products with sparse COO tpu operands: sparse x dense (addmm and
// what PyTorch builds on it: mm, mv, torch.sparse.mm), batched sparse x
// dense (bmm), and sparse x sparse.
#include <ATen/DeviceGuard.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <tuple>
#include <vector>

#include "aten/sparse_coo_ops.h"
#include "aten/sparse_coo_util.h"

namespace torch_tpu::aten::sparse {
namespace {

void check_operands(const char* op, const at::Tensor& sparse, const at::Tensor& other, int64_t dims) {
  TORCH_CHECK(sparse.is_sparse() && sparse.sparse_dim() == dims && sparse.dense_dim() == 0, op, ": expected a ", dims,
              "-D sparse tensor without dense dims as the first operand, got sparse_dim ", sparse.sparse_dim(),
              " and dense_dim ", sparse.dense_dim());
  TORCH_CHECK(other.dim() == dims, op, ": expected a ", dims, "-D second operand, got ", other.sizes());
  TORCH_CHECK(sparse.size(dims - 1) == other.size(dims - 2), op, ": shapes cannot be multiplied (", sparse.sizes(),
              " and ", other.sizes(), ")");
  TORCH_CHECK(sparse.scalar_type() == other.scalar_type(), op, ": expected both operands to have the same dtype, got ",
              sparse.scalar_type(), " and ", other.scalar_type());
}

// sparse [n, k] @ dense [k, m]: each entry (i, l, v) adds v * dense[l] to row i.
at::Tensor sparse_times_dense(const char* op, const at::Tensor& sparse, const at::Tensor& dense) {
  check_operands(op, sparse, dense, 2);
  TORCH_CHECK(!dense.is_sparse(), op, ": expected a dense second operand");
  const at::Tensor indices = sparse._indices();
  const at::Tensor rows = dense.index_select(0, indices.select(0, 1)).mul(sparse._values().unsqueeze(1));
  return at::zeros({sparse.size(0), dense.size(1)}, dense.options()).index_add_(0, indices.select(0, 0), rows);
}

}  // namespace

at::Tensor addmm(const at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense, const at::Scalar& beta,
                 const at::Scalar& alpha) {
  const char* op = "aten::addmm";
  const at::OptionalDeviceGuard guard(at::device_of(sparse));
  at::Tensor product = sparse_times_dense(op, sparse, dense);
  TORCH_CHECK(self.scalar_type() == product.scalar_type(), op, ": expected self and mat2 to have the same dtype, got ",
              self.scalar_type(), " and ", product.scalar_type());
  if (alpha.toComplexDouble() != 1.0) product = product.mul(alpha);
  if (beta.toComplexDouble() == 0.0) return product;  // self is ignored, NaNs included, as for dense addmm
  const at::Tensor base = self.expand(product.sizes());
  return beta.toComplexDouble() == 1.0 ? base.add(product) : base.mul(beta).add(product);
}

at::Tensor& addmm_out(const at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense,
                      const at::Scalar& beta, const at::Scalar& alpha, at::Tensor& out) {
  return write_into(out, sparse::addmm(self, sparse, dense, beta, alpha));
}

at::Tensor& addmm_(at::Tensor& self, const at::Tensor& sparse, const at::Tensor& dense, const at::Scalar& beta,
                   const at::Scalar& alpha) {
  const at::Tensor result = sparse::addmm(self, sparse, dense, beta, alpha);
  TORCH_CHECK(self.sizes().equals(result.sizes()), "aten::addmm_: self of size ", self.sizes(),
              " cannot hold the product of size ", result.sizes());
  self.copy_(result);
  return self;
}

at::Tensor bmm(const at::Tensor& sparse, const at::Tensor& dense) {
  const at::OptionalDeviceGuard guard(at::device_of(sparse));
  const char* op = "aten::bmm";
  check_operands(op, sparse, dense, 3);
  TORCH_CHECK(!dense.is_sparse(), op, ": expected a dense second operand");
  TORCH_CHECK(sparse.size(0) == dense.size(0), op, ": expected the same batch size, got ", sparse.size(0), " and ",
              dense.size(0));
  const int64_t batch = sparse.size(0), n = sparse.size(1), k = sparse.size(2), m = dense.size(2);
  const at::Tensor indices = sparse._indices();
  const at::Tensor b = indices.select(0, 0);
  // Entry (b, i, l, v) adds v * dense[b, l] to row b * n + i of the result.
  const at::Tensor rows = dense.reshape({batch * k, m}).index_select(0, b.mul(k).add(indices.select(0, 2)))
                              .mul(sparse._values().unsqueeze(1));
  return at::zeros({batch * n, m}, dense.options()).index_add_(0, b.mul(n).add(indices.select(0, 1)), rows)
      .view({batch, n, m});
}

at::Tensor& bmm_out(const at::Tensor& sparse, const at::Tensor& dense, at::Tensor& out) {
  return write_into(out, sparse::bmm(sparse, dense));
}

at::Tensor sparse_sparse_matmul(const at::Tensor& a_in, const at::Tensor& b_in) {
  const at::OptionalDeviceGuard guard(at::device_of(a_in));
  const char* op = "aten::_sparse_sparse_matmul";
  check_operands(op, a_in, b_in, 2);
  TORCH_CHECK(b_in.is_sparse() && b_in.sparse_dim() == 2 && b_in.dense_dim() == 0, op,
              ": expected a 2-D sparse second operand without dense dims");
  const at::Tensor a = a_in.coalesce(), b = b_in.coalesce();
  const int64_t n = a.size(0), m = b.size(1);
  const std::vector<int64_t> sizes{n, m};
  // b is sorted by row: entry (i, l, v) of a meets every entry (l, j, w) of b.
  auto [from_a, from_b] = equal_pairs(b._indices().select(0, 0), a._indices().select(0, 1));
  const at::Tensor i = a._indices().select(0, 0).index_select(0, from_a);
  const at::Tensor j = b._indices().select(0, 1).index_select(0, from_b);
  const at::Tensor products = a._values().index_select(0, from_a).mul(b._values().index_select(0, from_b));
  const at::Tensor linear = i.mul(m).add(j);
  if (linear.size(0) == 0) return make_sparse(sizes, 2, at::empty({2, 0}, linear.options()), products, true);
  auto [unique, inverse, counts] = at::_unique2(linear, /*sorted=*/true, /*return_inverse=*/true, false);
  const at::Tensor summed = at::zeros({unique.size(0)}, products.options()).index_add_(0, inverse, products);
  return make_sparse(sizes, 2, indices_of_linear(unique, sizes), summed, true);
}

}  // namespace torch_tpu::aten::sparse
