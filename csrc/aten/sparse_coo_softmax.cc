// softmax and log_softmax of sparse COO tpu tensors, and their gradients.
// Along a sparse dim, a line is the entries that share every other sparse
// index; the line's missing entries count as -inf (they stay missing in the
// result). Along a dense dim it is the dense softmax of the values.
#include <ATen/DeviceGuard.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/ops/_log_softmax.h>
#include <ATen/ops/_log_softmax_backward_data.h>
#include <ATen/ops/_softmax.h>
#include <ATen/ops/_softmax_backward_data.h>
#include <ATen/ops/_unique2.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/util/Exception.h>

#include <cstdint>
#include <limits>
#include <tuple>
#include <vector>

#include "aten/sparse_coo_ops.h"
#include "aten/sparse_coo_util.h"

namespace torch_tpu::aten::sparse {
namespace {

// Which line along `dim` (a sparse dim) each entry of the coalesced `input` is on.
struct Lines {
  at::Tensor of_entry;  // [nnz]
  int64_t count;
};

Lines lines_along(const at::Tensor& input, int64_t dim) {
  std::vector<int64_t> other_dims;
  for (int64_t d = 0; d < input.sparse_dim(); ++d) {
    if (d != dim) other_dims.push_back(d);
  }
  auto [unique, inverse, counts] = at::_unique2(linear_index_over(input, other_dims), /*sorted=*/true,
                                                /*return_inverse=*/true, false);
  return {inverse, unique.size(0)};
}

std::vector<int64_t> per_line_shape(const at::Tensor& values, const Lines& lines) {
  std::vector<int64_t> shape = values.sizes().vec();
  shape[0] = lines.count;
  return shape;
}

// Each entry's line's sum of `values`.
at::Tensor line_sum(const at::Tensor& values, const Lines& lines) {
  return at::zeros(per_line_shape(values, lines), values.options())
      .index_add_(0, lines.of_entry, values)
      .index_select(0, lines.of_entry);
}

at::Tensor line_max(const at::Tensor& values, const Lines& lines) {
  return at::full(per_line_shape(values, lines), -std::numeric_limits<double>::infinity(), values.options())
      .index_reduce_(0, lines.of_entry, values, "amax")
      .index_select(0, lines.of_entry);
}

int64_t checked_dim(const char* op, const at::Tensor& input, int64_t dim, bool half_to_float) {
  TORCH_CHECK(!half_to_float, op, ": softmax with half to float conversion is not supported on tpu");
  TORCH_CHECK(input.is_sparse(), op, ": expected a sparse COO input");
  return at::maybe_wrap_dim(dim, input.dim());
}

at::Tensor softmax_impl(const char* op, const at::Tensor& self, int64_t dim, bool half_to_float, bool log) {
  const at::OptionalDeviceGuard guard(at::device_of(self));
  dim = checked_dim(op, self, dim, half_to_float);
  const at::Tensor input = self.coalesce();
  const int64_t sparse_dim = input.sparse_dim();
  const at::Tensor values = input._values();
  at::Tensor result;
  if (input._nnz() == 0) {
    result = values.clone();
  } else if (dim >= sparse_dim) {
    const int64_t value_dim = dim - sparse_dim + 1;
    result = log ? at::_log_softmax(values, value_dim, false) : at::_softmax(values, value_dim, false);
  } else {
    const Lines lines = lines_along(input, dim);
    const at::Tensor shifted = values.sub(line_max(values, lines));
    const at::Tensor exp = shifted.exp();
    const at::Tensor sum = line_sum(exp, lines);
    result = log ? shifted.sub(sum.log()) : exp.div(sum);
  }
  return make_sparse(input.sizes(), sparse_dim, input._indices().clone(), result, true);
}

// The gradient's values at the output's entries (the output is coalesced).
at::Tensor grad_values(const at::Tensor& grad, const at::Tensor& output) {
  const int64_t sparse_dim = output.sparse_dim();
  const at::IntArrayRef sparse_sizes = output.sizes().slice(0, sparse_dim);
  const at::Tensor linear = linear_index(output._indices(), sparse_sizes);
  if (!grad.is_sparse()) return rows_of(grad, sparse_dim).index_select(0, linear);
  return values_at(grad.coalesce(), linear, sparse_sizes);
}

at::Tensor softmax_backward_impl(const char* op, const at::Tensor& grad, const at::Tensor& output_in, int64_t dim,
                                 bool log) {
  const at::OptionalDeviceGuard guard(at::device_of(output_in));
  dim = checked_dim(op, output_in, dim, false);
  TORCH_CHECK(grad.sizes().equals(output_in.sizes()), op, ": expected the gradient of size ", output_in.sizes(),
              ", got ", grad.sizes());
  const at::Tensor output = output_in.coalesce();
  const int64_t sparse_dim = output.sparse_dim();
  const at::Tensor out = output._values();
  at::Tensor result;
  if (output._nnz() == 0) {
    result = out.clone();
  } else {
    const at::Tensor g = grad_values(grad, output).to(out.scalar_type());
    if (dim >= sparse_dim) {
      const int64_t value_dim = dim - sparse_dim + 1;
      result = log ? at::_log_softmax_backward_data(g, out, value_dim, out.scalar_type())
                   : at::_softmax_backward_data(g, out, value_dim, out.scalar_type());
    } else {
      const Lines lines = lines_along(output, dim);
      result = log ? g.sub(out.exp().mul(line_sum(g, lines))) : out.mul(g.sub(line_sum(g.mul(out), lines)));
    }
  }
  return make_sparse(output.sizes(), sparse_dim, output._indices().clone(), result, true);
}

}  // namespace

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl("aten::_sparse_softmax", self, dim, half_to_float, false);
}

at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return softmax_impl("aten::_sparse_log_softmax", self, dim, half_to_float, true);
}

at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim, const at::Tensor&) {
  return softmax_backward_impl("aten::_sparse_softmax_backward_data", grad, output, dim, false);
}

at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim, const at::Tensor&) {
  return softmax_backward_impl("aten::_sparse_log_softmax_backward_data", grad, output, dim, true);
}

}  // namespace torch_tpu::aten::sparse
