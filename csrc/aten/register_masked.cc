// ATen glue for the mask-driven ops: masked_fill, masked_scatter_,
// masked_select, nonzero / nonzero_static (torch.where(cond), argwhere and
// nonzero(as_tuple=True) are composite over nonzero), unique
// (_unique, _unique2, unique_consecutive) and bincount, all calling
// csrc/ops/indexing/masked.cc.
//
// masked_select, nonzero, unique and bincount have a result size that
// depends on the data: a first small program computes it, the host reads
// it (a sync, as on CUDA), and the second program builds the result.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/unique_dim_consecutive.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/fill_value_check.h"
#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/index_checks.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "aten/result_layout.h"
#include "ops/indexing/masked.h"

namespace torch_tpu::aten {

namespace {

using Values = std::vector<hlo::Value>;

std::string dims_key(c10::IntArrayRef dims) {
  std::string key;
  append_int(key, static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) append_int(key, d);
  return key;
}

// ---- masked_fill --------------------------------------------------------------------------

void check_bool_mask(const char* op, const at::Tensor& mask) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, op, " only supports boolean masks, but got mask with dtype ",
              mask.scalar_type());
}

// value: a Scalar, or a 0-dim tensor (a CPU one becomes a Scalar).
at::Tensor masked_fill_any(const at::Tensor& self, const at::Tensor& mask, const c10::Scalar* value,
                           const at::Tensor* value_tensor, bool inplace) {
  check_bool_mask("masked_fill_", mask);
  const auto shape = at::infer_size(self.sizes(), mask.sizes());
  if (inplace) prepare_out(const_cast<at::Tensor&>(self), shape, true);
  const ElementType type = to_element_type(self.scalar_type(), "aten::masked_fill");
  OpCall call{inplace ? "aten::masked_fill_" : "aten::masked_fill", dims_key(shape), {self, mask}, {}};
  bool scalar_value = true;
  if (value_tensor) {
    TORCH_CHECK(value_tensor->dim() == 0,
                "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                value_tensor->dim(), " dimension(s).");
    if (value_tensor->device().is_cpu()) {
      call.scalars.push_back({type, checked_cast_scalar(value_tensor->item(), self.scalar_type())});
    } else {
      defer_fill_value_check(*value_tensor, self.scalar_type());
      call.tensors.push_back(*value_tensor);
      scalar_value = false;
    }
  } else {
    call.scalars.push_back({type, checked_cast_scalar(*value, self.scalar_type())});
  }
  call.attributes.push_back(scalar_value ? 's' : 't');
  auto body = [shape, scalar_value](hlo::Builder& b, const Values& t, const Values& s) {
    return Values{ops::lower_masked_fill(b, t[0], t[1], scalar_value ? s[0] : t[2], shape)};
  };
  if (inplace) {
    run_op_into(call, body, self);
    return self;
  }
  return run_op(call, body).at(0);
}

at::Tensor& masked_fill_scalar_(at::Tensor& s, const at::Tensor& m, const c10::Scalar& v) {
  masked_fill_any(s, m, &v, nullptr, true);
  return s;
}
at::Tensor& masked_fill_tensor_(at::Tensor& s, const at::Tensor& m, const at::Tensor& v) {
  masked_fill_any(s, m, nullptr, &v, true);
  return s;
}
at::Tensor masked_fill_scalar(const at::Tensor& s, const at::Tensor& m, const c10::Scalar& v) {
  return masked_fill_any(s, m, &v, nullptr, false);
}
at::Tensor masked_fill_tensor(const at::Tensor& s, const at::Tensor& m, const at::Tensor& v) {
  return masked_fill_any(s, m, nullptr, &v, false);
}

// ---- masked_scatter_ ----------------------------------------------------------------------

at::Tensor& masked_scatter_(at::Tensor& self, const at::Tensor& mask, const at::Tensor& source) {
  check_bool_mask("masked_scatter_", mask);
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "masked_scatter_: expected self and source to have same dtypes but got", self.scalar_type(), " and ",
              source.scalar_type());
  const auto shape = at::infer_size(self.sizes(), mask.sizes());
  prepare_out(self, shape, true);
  OpCall call{"aten::masked_scatter_", dims_key(source.sizes()), {self, mask, source}, {}};
  run_checked_into(call, [](hlo::Builder& b, const Values& t, const Values&) {
    return ops::lower_masked_scatter(b, t[0], t[1], t[2]);
  }, self, CheckError::kRuntime, "Number of elements of source < number of ones in mask");
  return self;
}

// ---- counts read to the host --------------------------------------------------------------------

// The number of non-zero elements of `x` broadcast to `dims` (a sync).
int64_t count_nonzero_host(const at::Tensor& x, const std::vector<int64_t>& dims) {
  OpCall call{"aten::nonzero", "count" + dims_key(dims), {x}, {}};
  auto count = run_op(call, [dims](hlo::Builder& b, const Values& t, const Values&) {
    const hlo::Value v = t[0].dims() == dims ? t[0] : b.broadcast_in_dim(t[0], dims, [&] {
      std::vector<int64_t> map;
      const int64_t lead = static_cast<int64_t>(dims.size()) - t[0].rank();
      for (int64_t d = 0; d < t[0].rank(); ++d) map.push_back(lead + d);
      return map;
    }());
    return Values{ops::lower_count_nonzero(b, v)};
  });
  return count.at(0).item<int64_t>();
}

// ---- masked_select ----------------------------------------------------------------------------

at::Tensor masked_select_any(const at::Tensor& self, const at::Tensor& mask, at::Tensor* out) {
  TORCH_CHECK(mask.scalar_type() == at::kBool, "masked_select: expected BoolTensor for mask");
  const auto shape = at::infer_size(self.sizes(), mask.sizes());
  const int64_t count = count_nonzero_host(mask, shape);
  std::string key = dims_key(shape);
  append_int(key, count);
  OpCall call{"aten::masked_select", std::move(key), {self, mask}, {}};
  auto body = [shape, count](hlo::Builder& b, const Values& t, const Values&) {
    return Values{ops::lower_masked_select(b, t[0], t[1], shape, count)};
  };
  if (out) {
    check_exact(self.scalar_type(), *out);
    check_out_overlaps(*out, {&self, &mask});
    at::native::resize_output(*out, {count});
    run_op_into(call, body, *out);
    return *out;
  }
  return run_op(call, body).at(0);
}

at::Tensor masked_select(const at::Tensor& self, const at::Tensor& mask) { return masked_select_any(self, mask, nullptr); }
at::Tensor& masked_select_out(const at::Tensor& self, const at::Tensor& mask, at::Tensor& out) {
  masked_select_any(self, mask, &out);
  return out;
}

// ---- nonzero ----------------------------------------------------------------------------------

at::Tensor nonzero_any(const at::Tensor& self, std::optional<int64_t> static_size, int64_t fill, at::Tensor* out) {
  to_element_type(self.scalar_type(), "aten::nonzero");
  const int64_t count = static_size ? *static_size : count_nonzero_host(self, self.sizes().vec());
  std::string key;
  append_int(key, count);
  key.push_back(static_size ? 's' : '-');
  OpCall call{static_size ? "aten::nonzero_static" : "aten::nonzero", std::move(key), {self}, {}};
  const bool with_fill = static_size.has_value();
  if (with_fill) call.scalars.push_back({ElementType::kS64, fill});
  auto body = [count, with_fill](hlo::Builder& b, const Values& t, const Values& s) {
    return Values{ops::lower_nonzero(b, t[0], count, with_fill ? &s[0] : nullptr)};
  };
  // The result is stored by columns ([count, dim] with strides (1, count)),
  // as CUDA's kernels and PyTorch's shape functions give it (CPU's
  // nonzero_static is stored by rows).
  const std::vector<int64_t> by_columns{1, count};
  if (out) {
    check_exact(at::kLong, *out);
    if (at::native::resize_output(*out, {count, self.dim()}) && !static_size) {
      out->as_strided_({count, self.dim()}, by_columns);
    }
    run_op_into(call, body, *out);
    return *out;
  }
  at::Tensor result = run_op(call, body).at(0);
  if (self.dim() == 0) return result;
  // One column: the same memory either way, so a view gives CPU's strides.
  return self.dim() == 1 ? result.as_strided({count, 1}, by_columns) : with_strides(result, by_columns);
}

at::Tensor nonzero(const at::Tensor& self) { return nonzero_any(self, std::nullopt, 0, nullptr); }
at::Tensor& nonzero_out(const at::Tensor& self, at::Tensor& out) {
  nonzero_any(self, std::nullopt, 0, &out);
  return out;
}
at::Tensor nonzero_static(const at::Tensor& self, c10::SymInt size, int64_t fill_value) {
  const int64_t n = size.guard_int(__FILE__, __LINE__);
  TORCH_CHECK(n >= 0, "nonzero_static: 'size' must be an non-negative integer, but got size = ", n);
  return nonzero_any(self, n, fill_value, nullptr);
}

// ---- unique -----------------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_any(const at::Tensor& self, bool consecutive,
                                                          bool return_inverse, bool return_counts) {
  to_element_type(self.scalar_type(), "aten::_unique2");
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(self.scalar_type()), "\"unique\" not implemented for '",
                              self.scalar_type(), "'");
  const char* name = consecutive ? "aten::unique_consecutive" : "aten::_unique2";
  auto groups = run_op(OpCall{name, consecutive ? "groups_c" : "groups_s", {self}, {}},
                       [consecutive](hlo::Builder& b, const Values& t, const Values&) {
                         return ops::lower_unique_groups(b, t[0], consecutive);
                       });
  const int64_t count = groups.at(3).item<int64_t>();
  const auto inverse_dims = self.sizes().vec();
  std::string key = dims_key(inverse_dims);
  append_int(key, count);
  auto r = run_op(OpCall{name, "results" + key, {groups[0], groups[1], groups[2]}, {}},
                  [count, inverse_dims](hlo::Builder& b, const Values& t, const Values&) {
                    return ops::lower_unique_results(b, t[0], t[1], t[2], count, inverse_dims);
                  });
  at::Tensor empty = at::empty({0}, self.options().dtype(at::kLong));
  return {r.at(0), return_inverse ? r.at(1) : empty, return_counts ? r.at(2) : empty};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique2(const at::Tensor& self, bool /*sorted*/, bool return_inverse,
                                                       bool return_counts) {
  return unique_any(self, false, return_inverse, return_counts);
}

std::tuple<at::Tensor, at::Tensor> unique(const at::Tensor& self, bool /*sorted*/, bool return_inverse) {
  auto [values, inverse, counts] = unique_any(self, false, return_inverse, false);
  return {values, inverse};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> unique_consecutive(const at::Tensor& self, bool return_inverse,
                                                                  bool return_counts, std::optional<int64_t> dim) {
  // Along a dim (of a tensor with more than one), as CPU decides.
  if (dim.has_value() && !(self.dim() == 1 && at::maybe_wrap_dim(*dim, 1) == 0)) {
    return at::unique_dim_consecutive(self, *dim, return_inverse, return_counts);
  }
  return unique_any(self, true, return_inverse, return_counts);
}

// ---- bincount ---------------------------------------------------------------------------------

at::Tensor bincount(const at::Tensor& self, const std::optional<at::Tensor>& weights_opt, int64_t minlength) {
  TORCH_CHECK(minlength >= 0, "minlength should be >= 0");
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isIntegralType(self.scalar_type(), false), "\"bincount\" not implemented for '",
                              self.scalar_type(), "'");
  TORCH_CHECK(self.dim() == 1, "bincount only supports 1-d non-negative integral inputs.");
  const at::Tensor* weights = weights_opt && weights_opt->defined() ? &*weights_opt : nullptr;
  TORCH_CHECK(!weights || (weights->dim() == 1 && weights->size(0) == self.size(0)),
              "weights should be 1-d and have the same length as input");
  c10::ScalarType out_type = at::kLong;
  if (weights && self.numel() > 0) {  // CPU counts an empty input in int64, weights or not
    const c10::ScalarType w = weights->scalar_type();
    out_type = (w == at::kFloat || w == at::kDouble) ? w : at::kDouble;
  }
  int64_t size = minlength;
  if (self.numel() > 0) {
    auto range = run_op(OpCall{"aten::bincount", "range", {self}, {}},
                        [](hlo::Builder& b, const Values& t, const Values&) {
                          return ops::lower_bincount_range(b, t[0]);
                        });
    TORCH_CHECK(!range.at(1).item<bool>(), "bincount only supports 1-d non-negative integral inputs.");
    const int64_t top = range.at(0).item<int64_t>();
    TORCH_CHECK(top < std::numeric_limits<int64_t>::max(),
                "maximum value of input overflowed, it should be < ", std::numeric_limits<int64_t>::max(),
                " but got ", top);
    size = std::max(size, top + 1);
  }
  // CPU's message for a count too large to address.
  TORCH_CHECK(size <= std::numeric_limits<int64_t>::max() / static_cast<int64_t>(c10::elementSize(out_type)),
              "Storage size calculation overflowed with sizes=[", size, "]");
  const ElementType out = to_element_type(out_type, "aten::bincount");
  std::string key;
  append_int(key, size);
  key.push_back(weights ? 'w' : '-');
  key.push_back(static_cast<char>(out));
  OpCall call{"aten::bincount", std::move(key), {self}, {}};
  if (weights) call.tensors.push_back(*weights);
  const bool has_weights = weights != nullptr;
  return run_op(call, [size, has_weights, out](hlo::Builder& b, const Values& t, const Values&) {
    return Values{ops::lower_bincount(b, t[0], has_weights ? &t[1] : nullptr, size, out)};
  }).at(0);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("masked_fill_.Scalar", masked_fill_scalar_);
  m.impl("masked_fill_.Tensor", masked_fill_tensor_);
  m.impl("masked_fill.Scalar", masked_fill_scalar);
  m.impl("masked_fill.Tensor", masked_fill_tensor);
  m.impl("masked_scatter_", masked_scatter_);
  m.impl("masked_select", masked_select);
  m.impl("masked_select.out", masked_select_out);
  m.impl("nonzero", nonzero);
  m.impl("nonzero.out", nonzero_out);
  m.impl("nonzero_static", nonzero_static);
  m.impl("_unique2", unique2);
  m.impl("_unique", unique);
  m.impl("unique_consecutive", unique_consecutive);
  m.impl("bincount", bincount);
}

}  // namespace torch_tpu::aten
