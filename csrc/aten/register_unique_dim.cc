// torch.unique / unique_consecutive along a dim: the distinct slices of a
// tensor, composed from tpu ops (each with its own lowering): the slices
// are rows of a [n, k] matrix, sorted lexicographically by k stable sorts
// from the last column to the first, and a row starts a group where it
// differs from the one before. The number of groups is read to the host
// (a sync, as on CPU and CUDA: it sizes the results).
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/argsort.h>
#include <ATen/ops/cat.h>
#include <ATen/ops/cumsum.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/nonzero.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <tuple>
#include <vector>

namespace torch_tpu::aten {

namespace {

using Result = std::tuple<at::Tensor, at::Tensor, at::Tensor>;

Result unique_along(const at::Tensor& self, int64_t dim_in, bool consecutive) {
  TORCH_CHECK_INDEX(self.dim() > 0, "Dimension specified as ", dim_in, " but tensor has no dimensions");
  const int64_t dim = at::maybe_wrap_dim(dim_in, self.dim());
  for (int64_t d = 0; d < self.dim(); ++d) {
    TORCH_CHECK(d == dim || self.size(d) > 0,
                "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"unique_dim\" not implemented for '", self.scalar_type(), "'");
  const at::TensorOptions index_options = self.options().dtype(at::kLong);
  const at::Tensor moved = self.movedim(dim, 0);
  const int64_t n = moved.size(0);
  if (n == 0) {
    return {self.clone(), at::empty({0}, index_options), at::empty({0}, index_options)};
  }
  const at::Tensor rows = moved.reshape({n, -1});
  const int64_t k = rows.size(1);
  at::Tensor perm = at::arange(n, index_options);
  if (!consecutive) {
    // Lexicographic order: stable sorts by each column, the first column last.
    for (int64_t c = k - 1; c >= 0; --c) {
      const at::Tensor keys = rows.select(1, c).index_select(0, perm);
      perm = perm.index_select(0, at::argsort(keys, /*stable=*/true, 0, /*descending=*/false));
    }
  }
  const at::Tensor sorted = rows.index_select(0, perm);
  at::Tensor starts = at::ones({1}, index_options.dtype(at::kBool));
  if (n > 1) starts = at::cat({starts, sorted.slice(0, 1).ne(sorted.slice(0, 0, n - 1)).any(1)});
  const at::Tensor group = starts.cumsum(0).sub_(1);
  const at::Tensor first_of_group = at::nonzero(starts).squeeze(1);  // reads the count
  const int64_t count = first_of_group.size(0);

  std::vector<int64_t> value_sizes = moved.sizes().vec();
  value_sizes[0] = count;
  const at::Tensor values = sorted.index_select(0, first_of_group).reshape(value_sizes).movedim(0, dim);
  const at::Tensor inverse = at::empty({n}, index_options).index_put_({perm}, group);
  const at::Tensor counts = at::zeros({count}, index_options).index_add_(0, group, at::ones({n}, index_options));
  return {values, inverse, counts};
}

Result unique_dim(const at::Tensor& self, int64_t dim, bool /*sorted*/, bool return_inverse, bool return_counts) {
  return unique_along(self, dim, false);
}

Result unique_dim_consecutive(const at::Tensor& self, int64_t dim, bool return_inverse, bool return_counts) {
  return unique_along(self, dim, true);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("unique_dim", unique_dim);
  m.impl("unique_dim_consecutive", unique_dim_consecutive);
}

}  // namespace torch_tpu::aten
