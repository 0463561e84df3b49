// ATen glue for searchsorted and bucketize (Tensor and Scalar values,
// out=), calling csrc/ops/indexing/search.cc. Checks are CPU's
// (BucketizationUtils.h), except that a sorter index out of range raises
// at the next sync instead of reading the sorter back here.
#include <ATen/core/Tensor.h>
#include <ATen/native/BucketizationUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/result_type.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/index_checks.h"
#include "aten/op_runner.h"
#include "ops/indexing/search.h"

namespace torch_tpu::aten {

namespace {

using Values = std::vector<hlo::Value>;

// value: a tensor, or (undefined) the Scalar `scalar`.
at::Tensor search(const at::Tensor& boundaries, const at::Tensor& value, const c10::Scalar* scalar, bool out_int32,
                  bool right, std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter_opt,
                  at::Tensor* out) {
  const at::Tensor sorter = sorter_opt && sorter_opt->defined() ? *sorter_opt : at::Tensor();
  const c10::ScalarType out_type = out_int32 ? at::kInt : at::kLong;
  // The checks read only metadata: the sorter's range is checked on the device.
  at::Tensor probe = scalar ? at::native::searchsorted_scalar_tensor(*scalar, boundaries.device()) : value;
  const at::Tensor placeholder = out ? *out : at::empty({0}, boundaries.options().dtype(out_type));
  if (sorter.defined()) {
    TORCH_CHECK(sorter.device() == boundaries.device(), "torch.searchsorted(): sorter and boundary tensors should ",
                "have same device type, but got sorter tensor device type ", sorter.device(),
                " and input value tensor device type ", boundaries.device());
    TORCH_CHECK(sorter.sizes() == boundaries.sizes(), "torch.searchsorted(): boundary and sorter must have the same "
                "size, but got boundary tensor ", boundaries.sizes(), "and got sorter tensor ", sorter.sizes());
    TORCH_CHECK(sorter.scalar_type() == at::kLong, "torch.searchsorted(): sorter must be a tensor of long ",
                "dtype but got dtype ", sorter.scalar_type());
  }
  TORCH_CHECK_NOT_IMPLEMENTED(!boundaries.is_complex() && !probe.is_complex(),
                              "\"searchsorted_out_cpu\" not implemented for '",
                              boundaries.is_complex() ? boundaries.scalar_type() : probe.scalar_type(), "'");
  at::native::searchsorted_pre_check(boundaries, probe, placeholder, out_int32, right,
                                     side ? std::optional<std::string_view>(std::string_view(side->data(), side->size()))
                                          : std::nullopt,
                                     at::Tensor());
  const bool upper = right || (side && *side == "right");
  const c10::ScalarType common = at::result_type(boundaries, probe);
  const ElementType compare = to_element_type(common, "aten::searchsorted");
  const ElementType result = to_element_type(out_type);
  std::string key;
  key.push_back(upper ? 'r' : 'l');
  key.push_back(static_cast<char>(compare));
  key.push_back(static_cast<char>(result));
  key.push_back(scalar ? 's' : 't');
  key.push_back(sorter.defined() ? 'o' : '-');
  OpCall call{"aten::searchsorted", std::move(key), {boundaries}, {}};
  if (scalar) {
    call.scalars.push_back({compare, cast_scalar(*scalar, common)});
  } else {
    call.tensors.push_back(value);
  }
  const bool has_sorter = sorter.defined();
  if (has_sorter) call.tensors.push_back(sorter);
  const bool is_scalar = scalar != nullptr;
  const int64_t m = boundaries.size(-1);
  auto body = [upper, compare, result, is_scalar, has_sorter, m](hlo::Builder& b, const Values& t, const Values& s) {
    std::optional<hlo::Value> order;
    if (has_sorter) order = t.back();
    const hlo::Value& v = is_scalar ? s[0] : t[1];
    hlo::Value flag = ops::false_flag(b);
    if (order) flag = ops::index_out_of_range(b, *order, m, false);
    return ops::Checked{ops::lower_searchsorted(b, t[0], v, upper, order, compare, result), flag};
  };
  const char* message = "torch.searchsorted(): sorter index out of range";
  if (out) {
    at::native::resize_output(*out, probe.sizes());
    run_checked_into(call, body, *out, CheckError::kRuntime, message);
    return *out;
  }
  return run_checked(call, body, CheckError::kRuntime, message);
}

at::Tensor searchsorted_tensor(const at::Tensor& seq, const at::Tensor& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  return search(seq, self, nullptr, out_int32, right, side, sorter, nullptr);
}
at::Tensor& searchsorted_tensor_out(const at::Tensor& seq, const at::Tensor& self, bool out_int32, bool right,
                                    std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter,
                                    at::Tensor& out) {
  search(seq, self, nullptr, out_int32, right, side, sorter, &out);
  return out;
}
at::Tensor searchsorted_scalar(const at::Tensor& seq, const c10::Scalar& self, bool out_int32, bool right,
                               std::optional<c10::string_view> side, const std::optional<at::Tensor>& sorter) {
  return search(seq, at::Tensor(), &self, out_int32, right, side, sorter, nullptr);
}

void check_boundaries(const at::Tensor& boundaries) {
  TORCH_CHECK(boundaries.dim() == 1, "boundaries tensor must be 1 dimension, but got dim(", boundaries.dim(), ")");
}

at::Tensor bucketize_tensor(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  check_boundaries(boundaries);
  return search(boundaries, self, nullptr, out_int32, right, std::nullopt, std::nullopt, nullptr);
}
at::Tensor& bucketize_tensor_out(const at::Tensor& self, const at::Tensor& boundaries, bool out_int32, bool right,
                                 at::Tensor& out) {
  check_boundaries(boundaries);
  search(boundaries, self, nullptr, out_int32, right, std::nullopt, std::nullopt, &out);
  return out;
}
at::Tensor bucketize_scalar(const c10::Scalar& self, const at::Tensor& boundaries, bool out_int32, bool right) {
  check_boundaries(boundaries);
  return search(boundaries, at::Tensor(), &self, out_int32, right, std::nullopt, std::nullopt, nullptr);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("searchsorted.Tensor", searchsorted_tensor);
  m.impl("searchsorted.Tensor_out", searchsorted_tensor_out);
  m.impl("searchsorted.Scalar", searchsorted_scalar);
  m.impl("bucketize.Tensor", bucketize_tensor);
  m.impl("bucketize.Tensor_out", bucketize_tensor_out);
  m.impl("bucketize.Scalar", bucketize_scalar);
}

}  // namespace torch_tpu::aten
