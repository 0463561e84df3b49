// ATen glue for the indexing ops: gather, scatter / scatter_add /
// scatter_reduce, index_select, index_add, index_copy, index_fill, take,
// put_, advanced indexing (index.Tensor) and _index_put_impl_ (behind
// index_put_ and `x[idx] = v`), all calling csrc/ops/indexing.
//
// Shape and dtype checks raise what CPU raises. Index bounds depend on
// device values: each op computes an out-of-range flag in its own program
// and defers it (deferred_checks.h), so a bad index raises CPU's exception
// type at the next sync. Boolean masks in advanced indexing are turned into
// integer indices by nonzero, which reads their count to the host.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/List.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/ScatterGatherChecks.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/nonzero.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/fill_value_check.h"
#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/index_checks.h"
#include "aten/out_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/indexing/advanced_index.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::aten {

namespace {

using ops::Checked;
using ops::ScatterKind;
using Values = std::vector<hlo::Value>;

std::string bounds_message(const char* op, int64_t dim, int64_t size) {
  return std::string(op) + ": index out of bounds for dimension " + std::to_string(dim) + " with size " +
         std::to_string(size);
}

int64_t size_or_one(const at::Tensor& t, int64_t dim) { return t.dim() == 0 ? 1 : t.size(dim); }

// An index tensor on self's device, or a CPU one moved there (CUDA accepts
// CPU indices for advanced indexing). An index on another tpu device is
// refused in CUDA's words rather than copied across devices.
at::Tensor on_device_of(const at::Tensor& index, const at::Tensor& self, const char* op) {
  if (index.device() == self.device()) return index;
  TORCH_CHECK(index.is_cpu(), "Expected all tensors to be on the same device, but found at least two devices, ",
              self.device(), " and ", index.device(), "! (when checking argument for argument index in method ", op,
              ")");
  return index.to(self.device());
}

// Advanced indexing's device rule, with CUDA's message.
void check_index_device(const at::Tensor& index, const at::Tensor& self) {
  TORCH_CHECK_INDEX(index.is_cpu() || index.device() == self.device(),
                    "indices should be either on cpu or on the same device as the indexed tensor (", self.device(),
                    ")");
}

// ---- gather --------------------------------------------------------------------

at::Tensor gather_into(const at::Tensor& self, int64_t dim_in, const at::Tensor& index, at::Tensor* out) {
  const int64_t dim = at::maybe_wrap_dim(dim_in, self.dim());
  at::native::scatter_gather_dtype_check("gather", self, index, std::nullopt);
  if (index.numel() == 0) {
    // CPU checks no shapes for an empty index: the result is its empty shape.
    if (!out) return at::empty(index.sizes(), self.options());
    check_out_dtype(*out, self.scalar_type());  // gather is structured
    at::native::resize_output(*out, index.sizes());
    return *out;
  }
  at::native::gather_shape_check(self, dim, index);
  std::string key;
  append_int(key, dim);
  OpCall call{"aten::gather", std::move(key), {self, index}, {}};
  auto body = [dim](hlo::Builder& b, const Values& t, const Values&) { return ops::lower_gather(b, t[0], t[1], dim); };
  const std::string message = bounds_message("gather()", dim, size_or_one(self, dim));
  if (out) {
    check_out_dtype(*out, self.scalar_type());  // gather is structured
    at::native::resize_output(*out, index.sizes());
    // CPU's checks: the result may not share memory with the input, nor
    // partly with the index.
    at::assert_no_overlap(*out, self);
    at::assert_no_partial_overlap(*out, index);
    run_checked_into(call, body, *out, CheckError::kRuntime, message);
    return *out;
  }
  return run_checked(call, body, CheckError::kRuntime, message);
}

at::Tensor gather(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool) {
  at::Tensor r = gather_into(self, dim, index, nullptr);
  return r;
}
at::Tensor& gather_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, bool, at::Tensor& out) {
  gather_into(self, dim, index, &out);
  return out;
}

// ---- scatter family -----------------------------------------------------------------

enum class Form { kFunctional, kInPlace, kOut };

ScatterKind scatter_reduce_kind(c10::string_view reduce) {
  if (reduce == "add") return ScatterKind::kSum;
  if (reduce == "multiply") return ScatterKind::kProd;
  TORCH_CHECK(false, "reduce argument must be either add or multiply.");
}

ScatterKind scatter_reduce_two_kind(c10::string_view reduce) {
  if (reduce == "sum") return ScatterKind::kSum;
  if (reduce == "prod") return ScatterKind::kProd;
  if (reduce == "mean") return ScatterKind::kMean;
  // "max" / "min": undocumented aliases CPU and CUDA accept.
  if (reduce == "amax" || reduce == "max") return ScatterKind::kMax;
  if (reduce == "amin" || reduce == "min") return ScatterKind::kMin;
  TORCH_CHECK(false, "reduce argument must be either sum, prod, mean, amax or amin, got ", reduce);
}

// src: a tensor, or (when undefined) the Scalar `value`.
at::Tensor scatter_any(const char* name, const char* method, const at::Tensor& self, int64_t dim_in,
                       const at::Tensor& index, const at::Tensor& src, const c10::Scalar& value, ScatterKind kind,
                       bool include_self, Form form, at::Tensor* out) {
  const int64_t dim = at::maybe_wrap_dim(dim_in, self.dim());
  const bool has_src = src.defined();
  at::native::scatter_gather_dtype_check(method, self, index,
                                         has_src ? std::optional<at::Tensor>(src) : std::nullopt);
  at::native::scatter_shape_check(self, dim, index, has_src ? std::optional<at::Tensor>(src) : std::nullopt);
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(self.scalar_type()) ||
                                  (kind != ScatterKind::kMax && kind != ScatterKind::kMin),
                              "\"scatter_gather_tensor_cpu_reduce_", kind == ScatterKind::kMax ? "amax" : "amin",
                              "\" not implemented for '", self.scalar_type(), "'");
  const ElementType type = to_element_type(self.scalar_type(), name);
  std::string key;
  append_int(key, dim);
  key.push_back(static_cast<char>(kind));
  key.push_back(include_self ? 'i' : '-');
  key.push_back(has_src ? 's' : 'v');
  OpCall call{name, std::move(key), {self, index}, {}};
  if (has_src) {
    call.tensors.push_back(src);
  } else {
    call.scalars.push_back({type, checked_cast_scalar(value, self.scalar_type())});
  }
  auto body = [dim, kind, include_self, has_src](hlo::Builder& b, const Values& t, const Values& s) {
    return ops::lower_scatter(b, t[0], t[1], has_src ? t[2] : s[0], dim, kind, include_self);
  };
  const std::string message = bounds_message(method, dim, size_or_one(self, dim));
  // CPU's checks, with its messages: the written tensor may share no
  // memory with the index or the source.
  auto check_written = [&](const at::Tensor& dst) {
    at::assert_no_overlap(dst, index);
    if (has_src) at::assert_no_overlap(dst, src);
  };
  switch (form) {
    case Form::kFunctional: return run_checked(call, body, CheckError::kRuntime, message);
    case Form::kInPlace:
      check_written(self);
      run_checked_into(call, body, self, CheckError::kRuntime, message);
      return self;
    case Form::kOut:
      check_exact(self.scalar_type(), *out);
      at::native::resize_output(*out, self.sizes());
      check_written(*out);
      run_checked_into(call, body, *out, CheckError::kRuntime, message);
      return *out;
  }
  return self;
}

const at::Tensor kNoSrc;

// scatter (src / value, optional reduce)
at::Tensor scatter_src(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src) {
  return scatter_any("aten::scatter", "scatter", s, d, i, src, 0, ScatterKind::kAssign, true, Form::kFunctional, nullptr);
}
at::Tensor& scatter_src_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src) {
  scatter_any("aten::scatter_", "scatter", s, d, i, src, 0, ScatterKind::kAssign, true, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& scatter_src_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, at::Tensor& out) {
  scatter_any("aten::scatter", "scatter", s, d, i, src, 0, ScatterKind::kAssign, true, Form::kOut, &out);
  return out;
}
at::Tensor scatter_value(const at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v) {
  return scatter_any("aten::scatter", "scatter", s, d, i, kNoSrc, v, ScatterKind::kAssign, true, Form::kFunctional, nullptr);
}
at::Tensor& scatter_value_(at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v) {
  scatter_any("aten::scatter_", "scatter", s, d, i, kNoSrc, v, ScatterKind::kAssign, true, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& scatter_value_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v, at::Tensor& out) {
  scatter_any("aten::scatter", "scatter", s, d, i, kNoSrc, v, ScatterKind::kAssign, true, Form::kOut, &out);
  return out;
}
at::Tensor scatter_reduce(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, c10::string_view r) {
  return scatter_any("aten::scatter", "scatter", s, d, i, src, 0, scatter_reduce_kind(r), true, Form::kFunctional, nullptr);
}
at::Tensor& scatter_reduce_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, c10::string_view r) {
  scatter_any("aten::scatter_", "scatter", s, d, i, src, 0, scatter_reduce_kind(r), true, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& scatter_reduce_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src,
                               c10::string_view r, at::Tensor& out) {
  scatter_any("aten::scatter", "scatter", s, d, i, src, 0, scatter_reduce_kind(r), true, Form::kOut, &out);
  return out;
}
at::Tensor scatter_value_reduce(const at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v,
                                c10::string_view r) {
  return scatter_any("aten::scatter", "scatter", s, d, i, kNoSrc, v, scatter_reduce_kind(r), true, Form::kFunctional,
                     nullptr);
}
at::Tensor& scatter_value_reduce_(at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v,
                                  c10::string_view r) {
  scatter_any("aten::scatter_", "scatter", s, d, i, kNoSrc, v, scatter_reduce_kind(r), true, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& scatter_value_reduce_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v,
                                     c10::string_view r, at::Tensor& out) {
  scatter_any("aten::scatter", "scatter", s, d, i, kNoSrc, v, scatter_reduce_kind(r), true, Form::kOut, &out);
  return out;
}

// scatter_add
at::Tensor scatter_add(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src) {
  return scatter_any("aten::scatter_add", "scatter_add", s, d, i, src, 0, ScatterKind::kSum, true, Form::kFunctional,
                     nullptr);
}
at::Tensor& scatter_add_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src) {
  scatter_any("aten::scatter_add_", "scatter_add", s, d, i, src, 0, ScatterKind::kSum, true, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& scatter_add_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, at::Tensor& out) {
  scatter_any("aten::scatter_add", "scatter_add", s, d, i, src, 0, ScatterKind::kSum, true, Form::kOut, &out);
  return out;
}

// scatter_reduce.two
at::Tensor scatter_reduce_two(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src,
                              c10::string_view r, bool include_self) {
  return scatter_any("aten::scatter_reduce", "scatter_reduce", s, d, i, src, 0, scatter_reduce_two_kind(r),
                     include_self, Form::kFunctional, nullptr);
}
at::Tensor& scatter_reduce_two_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src,
                                c10::string_view r, bool include_self) {
  scatter_any("aten::scatter_reduce_", "scatter_reduce", s, d, i, src, 0, scatter_reduce_two_kind(r), include_self,
              Form::kInPlace, nullptr);
  return s;
}
at::Tensor& scatter_reduce_two_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src,
                                   c10::string_view r, bool include_self, at::Tensor& out) {
  scatter_any("aten::scatter_reduce", "scatter_reduce", s, d, i, src, 0, scatter_reduce_two_kind(r), include_self,
              Form::kOut, &out);
  return out;
}

// ---- index_select ---------------------------------------------------------------------

at::Tensor index_select_into(const at::Tensor& self, int64_t dim_in, const at::Tensor& index_in, at::Tensor* out) {
  const int64_t dim = at::maybe_wrap_dim(dim_in, self.dim());
  TORCH_CHECK_INDEX(index_in.dim() <= 1, "index_select(): Index is supposed to be a vector");
  TORCH_CHECK(index_in.scalar_type() == at::kLong || index_in.scalar_type() == at::kInt,
              "index_select(): Expected dtype int32 or int64 for index");
  TORCH_CHECK_INDEX(self.dim() > 0 || index_in.numel() == 1, "index_select(): Index to scalar can have only 1 value, got ",
                    index_in.numel(), " value(s)");
  const at::Tensor index = on_device_of(index_in, self, "index_select");
  std::vector<int64_t> shape = self.sizes().vec();
  if (self.dim() > 0) shape[dim] = index.numel();
  std::string key;
  append_int(key, dim);
  OpCall call{"aten::index_select", std::move(key), {self, index}, {}};
  auto body = [dim](hlo::Builder& b, const Values& t, const Values&) {
    return ops::lower_index_select(b, t[0], t[1], dim);
  };
  if (out) {
    check_exact(self.scalar_type(), *out);
    check_out_overlaps(*out, {&self, &index_in});
    at::native::resize_output(*out, shape);
    run_checked_into(call, body, *out, CheckError::kIndex, "index out of range in self");
    return *out;
  }
  return run_checked(call, body, CheckError::kIndex, "index out of range in self");
}

at::Tensor index_select(const at::Tensor& self, int64_t dim, const at::Tensor& index) {
  at::Tensor r = index_select_into(self, dim, index, nullptr);
  return r;
}
at::Tensor& index_select_out(const at::Tensor& self, int64_t dim, const at::Tensor& index, at::Tensor& out) {
  index_select_into(self, dim, index, &out);
  return out;
}

// ---- index_add / index_copy -------------------------------------------------------------

void check_index_source(const char* op, const at::Tensor& self, int64_t dim, const at::Tensor& index,
                        const at::Tensor& source) {
  TORCH_CHECK_INDEX(index.dim() <= 1, op, "(): Index is supposed to be a vector");
  TORCH_CHECK(self.scalar_type() == source.scalar_type(), op, "(): self (", self.scalar_type(), ") and source (",
              source.scalar_type(), ") must have the same scalar type");
  TORCH_CHECK(index.numel() == size_or_one(source, dim), op, "(): Number of indices (", index.numel(),
              ") should be equal to source.size(dim) (", size_or_one(source, dim), ")");
  bool same = source.dim() == self.dim() || (self.dim() <= 1 && source.dim() <= 1);
  if (same && self.dim() > 0 && source.dim() > 0) {
    for (int64_t d = 0; d < self.dim(); ++d) {
      if (d != dim && self.size(d) != source.size(d)) same = false;
    }
  }
  TORCH_CHECK(same, "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = ",
              self.sizes(), " source.shape = ", source.sizes());
}

at::Tensor index_update(const char* name, const char* method, const at::Tensor& self, int64_t dim_in,
                        const at::Tensor& index_in, const at::Tensor& source, ScatterKind kind,
                        const c10::Scalar& alpha, Form form, at::Tensor* out) {
  const int64_t dim = at::maybe_wrap_dim(dim_in, self.dim());
  if (kind == ScatterKind::kSum) {
    TORCH_CHECK(index_in.scalar_type() == at::kLong || index_in.scalar_type() == at::kInt, method,
                "(): Expected dtype int32/int64 for index");
  } else {
    TORCH_CHECK(index_in.scalar_type() == at::kLong, method, "(): Expected a long tensor for index, but got ",
                index_in.scalar_type());
  }
  check_index_source(method, self, dim, index_in, source);
  const at::Tensor index = on_device_of(index_in, self, method);
  const ElementType type = to_element_type(self.scalar_type(), name);
  const bool has_alpha = kind == ScatterKind::kSum && !(alpha.isIntegral(true) && alpha.toLong() == 1);
  std::string key;
  append_int(key, dim);
  key.push_back(static_cast<char>(kind));
  key.push_back(has_alpha ? 'a' : '-');
  OpCall call{name, std::move(key), {self, index, source}, {}};
  if (has_alpha) call.scalars.push_back({type, checked_cast_scalar(alpha, self.scalar_type())});
  auto body = [dim, kind, has_alpha](hlo::Builder& b, const Values& t, const Values& s) {
    std::optional<hlo::Value> a;
    if (has_alpha) a = s[0];
    return ops::lower_index_update(b, t[0], t[1], t[2], dim, kind, a);
  };
  const CheckError error = kind == ScatterKind::kSum ? CheckError::kRuntime : CheckError::kIndex;
  const std::string message = bounds_message(method, dim, size_or_one(self, dim));
  // CPU's checks, with its messages: the written tensor may share no
  // memory with the index or the source.
  auto check_written = [&](const at::Tensor& dst) {
    at::assert_no_overlap(dst, index_in);
    at::assert_no_overlap(dst, source);
  };
  switch (form) {
    case Form::kFunctional: return run_checked(call, body, error, message);
    case Form::kInPlace:
      check_written(self);
      run_checked_into(call, body, self, error, message);
      return self;
    case Form::kOut:
      check_exact(self.scalar_type(), *out);
      at::native::resize_output(*out, self.sizes());
      at::assert_no_partial_overlap(*out, self);
      check_written(*out);
      run_checked_into(call, body, *out, error, message);
      return *out;
  }
  return self;
}

at::Tensor index_add(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, const c10::Scalar& a) {
  return index_update("aten::index_add", "index_add_", s, d, i, src, ScatterKind::kSum, a, Form::kFunctional, nullptr);
}
at::Tensor& index_add_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, const c10::Scalar& a) {
  index_update("aten::index_add_", "index_add_", s, d, i, src, ScatterKind::kSum, a, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& index_add_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src,
                          const c10::Scalar& a, at::Tensor& out) {
  index_update("aten::index_add", "index_add_", s, d, i, src, ScatterKind::kSum, a, Form::kOut, &out);
  return out;
}
at::Tensor index_copy(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src) {
  return index_update("aten::index_copy", "index_copy_", s, d, i, src, ScatterKind::kAssign, 1, Form::kFunctional,
                      nullptr);
}
at::Tensor& index_copy_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src) {
  index_update("aten::index_copy_", "index_copy_", s, d, i, src, ScatterKind::kAssign, 1, Form::kInPlace, nullptr);
  return s;
}
at::Tensor& index_copy_out(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& src, at::Tensor& out) {
  index_update("aten::index_copy", "index_copy_", s, d, i, src, ScatterKind::kAssign, 1, Form::kOut, &out);
  return out;
}

// ---- index_fill -------------------------------------------------------------------------

at::Tensor index_fill_any(const at::Tensor& self, int64_t dim_in, const at::Tensor& index_in,
                          const c10::Scalar* value, const at::Tensor* value_tensor, bool inplace) {
  const int64_t dim = at::maybe_wrap_dim(dim_in, self.dim());
  TORCH_CHECK_INDEX(index_in.scalar_type() == at::kLong, "index_fill_(): Expected dtype int64 for index.");
  TORCH_CHECK(index_in.dim() <= 1, "Index has to be a vector/scalar");
  const at::Tensor index = on_device_of(index_in, self, "index_fill_");
  const ElementType type = to_element_type(self.scalar_type(), "aten::index_fill_");
  std::string key;
  append_int(key, dim);
  OpCall call{inplace ? "aten::index_fill_" : "aten::index_fill", std::move(key), {self, index}, {}};
  bool scalar_value = true;
  if (value_tensor) {
    TORCH_CHECK(value_tensor->dim() == 0, "index_fill_ only supports a 0-dimensional value tensor, but got tensor with ",
                value_tensor->dim(), " dimension(s).");
    if (value_tensor->device().is_cpu()) {
      call.scalars.push_back({type, checked_cast_scalar(value_tensor->item(), self.scalar_type())});
    } else {
      defer_fill_value_check(*value_tensor, self.scalar_type());
      call.tensors.push_back(*value_tensor);
      scalar_value = false;
    }
  } else {
    TORCH_CHECK(!value->isComplex() || self.is_complex(),
                "index_fill_(): Converting complex Scalar to non-complex type is not supported");
    call.scalars.push_back({type, checked_cast_scalar(*value, self.scalar_type())});
  }
  call.attributes.push_back(scalar_value ? 's' : 't');
  auto body = [dim, scalar_value](hlo::Builder& b, const Values& t, const Values& s) {
    return ops::lower_index_fill(b, t[0], t[1], scalar_value ? s[0] : t[2], dim);
  };
  const std::string message = bounds_message("index_fill_()", dim, size_or_one(self, dim));
  if (inplace) {
    run_checked_into(call, body, self, CheckError::kIndex, message);
    return self;
  }
  // CPU fills self.clone(), which keeps self's layout.
  return in_layout_of(run_checked(call, body, CheckError::kIndex, message), self);
}

at::Tensor& index_fill_scalar_(at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v) {
  index_fill_any(s, d, i, &v, nullptr, true);
  return s;
}
at::Tensor& index_fill_tensor_(at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& v) {
  index_fill_any(s, d, i, nullptr, &v, true);
  return s;
}
at::Tensor index_fill_scalar(const at::Tensor& s, int64_t d, const at::Tensor& i, const c10::Scalar& v) {
  return index_fill_any(s, d, i, &v, nullptr, false);
}
at::Tensor index_fill_tensor(const at::Tensor& s, int64_t d, const at::Tensor& i, const at::Tensor& v) {
  return index_fill_any(s, d, i, nullptr, &v, false);
}

// ---- take / put_ -------------------------------------------------------------------------

std::string flat_message(const char* op, int64_t n) {
  return std::string(op) + ": index out of range for a tensor of " + std::to_string(n) + " elements.";
}

at::Tensor take_into(const at::Tensor& self, const at::Tensor& index_in, at::Tensor* out) {
  TORCH_CHECK(index_in.scalar_type() == at::kLong, "take(): Expected a long tensor for index, but got ",
              index_in.scalar_type());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index_in.numel() != 0), "take(): tried to take from an empty tensor");
  const at::Tensor index = on_device_of(index_in, self, "take");
  OpCall call{"aten::take", "", {self, index}, {}};
  auto body = [](hlo::Builder& b, const Values& t, const Values&) { return ops::lower_take(b, t[0], t[1]); };
  const std::string message = flat_message("take()", self.numel());
  if (out) {
    check_exact(self.scalar_type(), *out);
    check_out_overlaps(*out, {&self, &index_in});
    at::native::resize_output(*out, index.sizes());
    run_checked_into(call, body, *out, CheckError::kIndex, message);
    return *out;
  }
  return run_checked(call, body, CheckError::kIndex, message);
}

at::Tensor take(const at::Tensor& self, const at::Tensor& index) {
  at::Tensor r = take_into(self, index, nullptr);
  return r;
}
at::Tensor& take_out(const at::Tensor& self, const at::Tensor& index, at::Tensor& out) {
  take_into(self, index, &out);
  return out;
}

at::Tensor& put_(at::Tensor& self, const at::Tensor& index_in, const at::Tensor& source, bool accumulate) {
  TORCH_CHECK(index_in.scalar_type() == at::kLong, "put_(): Expected a long tensor for index, but got ",
              index_in.scalar_type());
  TORCH_CHECK(self.scalar_type() == source.scalar_type(),
              "put_(): self and source expected to have the same dtype, but got self.dtype = ", self.scalar_type(),
              " and source.dtype = ", source.scalar_type());
  TORCH_CHECK(source.numel() == index_in.numel(),
              "put_(): Expected source and index to have the same number of elements, but got source.numel() = ",
              source.numel(), ", index.numel() = ", index_in.numel());
  TORCH_CHECK_INDEX(!(self.numel() == 0 && index_in.numel() != 0), "put_(): Tried to put elements into an empty tensor");
  const at::Tensor index = on_device_of(index_in, self, "put_");
  OpCall call{"aten::put_", accumulate ? "acc" : "set", {self, index, source}, {}};
  run_checked_into(call, [accumulate](hlo::Builder& b, const Values& t, const Values&) {
    return ops::lower_put(b, t[0], t[1], t[2], accumulate);
  }, self, CheckError::kIndex, flat_message("put_()", self.numel()));
  return self;
}

// ---- advanced indexing ------------------------------------------------------------------

struct Expanded {
  std::vector<at::Tensor> indices;  // integer index tensors on self's device
  std::vector<int64_t> positions;   // the dimension each indexes
};

std::string shape_text(c10::IntArrayRef s) {
  std::ostringstream o;
  o << s;
  return o.str();
}

// The index list with None dropped and boolean masks replaced by the
// integer coordinates of their true elements (nonzero reads their count).
Expanded expand_indices(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& list) {
  int64_t consumed = 0;
  for (const auto& o : list) {
    const std::optional<at::Tensor> idx = o;
    if (!idx || !idx->defined()) {
      ++consumed;
      continue;
    }
    const c10::ScalarType t = idx->scalar_type();
    TORCH_CHECK_INDEX(t == at::kLong || t == at::kInt || t == at::kByte || t == at::kBool,
                      "tensors used as indices must be long, int, byte or bool tensors");
    consumed += (t == at::kByte || t == at::kBool) ? idx->dim() : 1;
  }
  TORCH_CHECK_INDEX(consumed <= self.dim(), "too many indices for tensor of dimension ", self.dim(), " (got ",
                    consumed, ")");
  Expanded e;
  int64_t pos = 0;
  for (const auto& o : list) {
    const std::optional<at::Tensor> idx = o;
    if (!idx || !idx->defined()) {
      ++pos;
      continue;
    }
    check_index_device(*idx, self);
    const c10::ScalarType t = idx->scalar_type();
    if (t == at::kByte || t == at::kBool) {
      TORCH_CHECK_NOT_IMPLEMENTED(idx->dim() > 0, "indexing with a 0-dim boolean mask is not supported on tpu yet");
      for (int64_t j = 0; j < idx->dim(); ++j) {
        TORCH_CHECK_INDEX(idx->size(j) == self.size(pos + j), "The shape of the mask ", shape_text(idx->sizes()),
                          " at index ", j, " does not match the shape of the indexed tensor ",
                          shape_text(self.sizes()), " at index ", pos + j);
      }
      if (t == at::kByte) {
        TORCH_WARN("indexing with dtype torch.uint8 is now deprecated, please use a dtype torch.bool instead.");
      }
      // [count, mask.dim()]; a CPU mask needs no device sync.
      const at::Tensor coords = at::nonzero(*idx).to(self.device());
      for (int64_t j = 0; j < idx->dim(); ++j) {
        e.indices.push_back(coords.select(1, j));
        e.positions.push_back(pos + j);
      }
      pos += idx->dim();
    } else {
      e.indices.push_back(idx->to(self.device()));
      e.positions.push_back(pos);
      ++pos;
    }
  }
  // The index shapes must broadcast together.
  std::vector<int64_t> common;
  bool ok = true;
  for (const auto& i : e.indices) {
    std::vector<int64_t> s = i.sizes().vec();
    const size_t n = std::max(common.size(), s.size());
    std::vector<int64_t> merged(n);
    for (size_t k = 0; k < n; ++k) {
      const int64_t a = k + common.size() >= n ? common[k + common.size() - n] : 1;
      const int64_t c = k + s.size() >= n ? s[k + s.size() - n] : 1;
      if (a != c && a != 1 && c != 1) ok = false;
      merged[k] = a == 1 ? c : a;
    }
    common = merged;
  }
  if (!ok) {
    std::ostringstream o;
    for (size_t k = 0; k < e.indices.size(); ++k) o << (k ? ", " : "") << e.indices[k].sizes();
    TORCH_CHECK_INDEX(false, "shape mismatch: indexing tensors could not be broadcast together with shapes ", o.str());
  }
  return e;
}

std::string positions_key(const Expanded& e) {
  std::string key;
  for (int64_t p : e.positions) append_int(key, p);
  return key;
}

std::vector<std::vector<int64_t>> index_shapes(const Expanded& e) {
  std::vector<std::vector<int64_t>> s;
  for (const auto& i : e.indices) s.push_back(i.sizes().vec());
  return s;
}

const char* kIndexMessage = "index out of bounds: an index is outside the size of the dimension it indexes";

at::Tensor index_into(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& list, at::Tensor* out) {
  const Expanded e = expand_indices(self, list);
  if (e.indices.empty()) {
    TORCH_CHECK_INDEX(false, "index(): at least one index must be a tensor (got only None)");
  }
  const auto shape = ops::advanced_index_shape(self.sizes().vec(), e.positions, index_shapes(e));
  OpCall call{"aten::index", positions_key(e), {self}, {}};
  for (const auto& i : e.indices) call.tensors.push_back(i);
  auto positions = e.positions;
  auto body = [positions](hlo::Builder& b, const Values& t, const Values&) {
    return ops::lower_index(b, t[0], Values(t.begin() + 1, t.end()), positions);
  };
  if (out) {
    check_exact(self.scalar_type(), *out);
    at::native::resize_output(*out, shape);
    run_checked_into(call, body, *out, CheckError::kIndex, kIndexMessage);
    return *out;
  }
  return run_checked(call, body, CheckError::kIndex, kIndexMessage);
}

at::Tensor index(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices) {
  at::Tensor r = index_into(self, indices, nullptr);
  return r;
}
at::Tensor& index_out(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& indices, at::Tensor& out) {
  index_into(self, indices, &out);
  return out;
}

// PyTorch's _index_put_impl_ turns `self[mask] = value` with one boolean
// (or uint8) mask on self's device and a one-element CPU value into
// masked_fill_(mask, value.item()), so the value may have another dtype
// (t[t > 0] = torch.tensor(float("-inf")) on a bfloat16 t). The mask, of
// the dims it indexes, gets unit dims for the rest.
std::optional<at::Tensor> mask_for_masked_fill(const at::Tensor& self, const c10::List<std::optional<at::Tensor>>& list,
                                               const at::Tensor& value) {
  if (value.numel() != 1 || !value.device().is_cpu()) return std::nullopt;
  int64_t consumed = 0;
  std::optional<at::Tensor> mask;
  for (const auto& o : list) {
    const std::optional<at::Tensor> idx = o;
    if (!idx || !idx->defined()) {
      ++consumed;
      continue;
    }
    const c10::ScalarType t = idx->scalar_type();
    if ((t != at::kByte && t != at::kBool) || idx->device() != self.device() || mask) return std::nullopt;
    for (int64_t j = 0; j < idx->dim(); ++j) {
      const int64_t d = consumed + j;
      TORCH_CHECK_INDEX(d < self.dim() && idx->size(j) == self.size(d), "The shape of the mask ", idx->sizes(),
                        " at index ", j, " does not match the shape of the indexed tensor ", self.sizes(),
                        " at index ", d);
    }
    consumed += idx->dim();
    mask = *idx;
  }
  if (!mask) return std::nullopt;
  at::Tensor m = *mask;
  for (int64_t d = consumed; d < self.dim(); ++d) m = m.unsqueeze(-1);
  return m;
}

at::Tensor& index_put_impl_(at::Tensor& self, const c10::List<std::optional<at::Tensor>>& list,
                            const at::Tensor& values_in, bool accumulate, bool /*unsafe*/) {
  if (!accumulate) {
    if (auto mask = mask_for_masked_fill(self, list, values_in)) return self.masked_fill_(*mask, values_in.item());
  }
  TORCH_CHECK(values_in.scalar_type() == self.scalar_type(),
              "Index put requires the source and destination dtypes match, got ", self.scalar_type(),
              " for the destination and ", values_in.scalar_type(), " for the source.");
  const Expanded e = expand_indices(self, list);
  at::Tensor values = values_in.device() != self.device() && values_in.dim() == 0 ? values_in.to(self.device())
                                                                                  : values_in;
  if (e.indices.empty()) {
    // self[...] = values: every element (accumulate adds).
    at::Tensor v = values.expand(self.sizes());
    if (accumulate) {
      self.add_(v);
    } else {
      self.copy_(v);
    }
    return self;
  }
  const auto shape = ops::advanced_index_shape(self.sizes().vec(), e.positions, index_shapes(e));
  // Leading unit dims beyond the result's rank are dropped, as PyTorch's setitem does.
  while (values.dim() > static_cast<int64_t>(shape.size()) && values.size(0) == 1) values = values.squeeze(0);
  bool fits = values.dim() <= static_cast<int64_t>(shape.size());
  for (int64_t k = 0; fits && k < values.dim(); ++k) {
    const int64_t v = values.size(values.dim() - 1 - k);
    fits = v == 1 || v == shape[shape.size() - 1 - k];
  }
  TORCH_CHECK(fits, "shape mismatch: value tensor of shape ", values_in.sizes(),
              " cannot be broadcast to indexing result of shape ", c10::IntArrayRef(shape));
  std::string key = positions_key(e);
  key.push_back(accumulate ? 'a' : '-');
  OpCall call{"aten::_index_put_impl_", std::move(key), {self, values}, {}};
  for (const auto& i : e.indices) call.tensors.push_back(i);
  auto positions = e.positions;
  run_checked_into(call, [positions, accumulate](hlo::Builder& b, const Values& t, const Values&) {
    return ops::lower_index_put(b, t[0], Values(t.begin() + 2, t.end()), positions, t[1], accumulate);
  }, self, CheckError::kIndex, kIndexMessage);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("gather", gather);
  m.impl("gather.out", gather_out);
  m.impl("scatter.src", scatter_src);
  m.impl("scatter_.src", scatter_src_);
  m.impl("scatter.src_out", scatter_src_out);
  m.impl("scatter.value", scatter_value);
  m.impl("scatter_.value", scatter_value_);
  m.impl("scatter.value_out", scatter_value_out);
  m.impl("scatter.reduce", scatter_reduce);
  m.impl("scatter_.reduce", scatter_reduce_);
  m.impl("scatter.reduce_out", scatter_reduce_out);
  m.impl("scatter.value_reduce", scatter_value_reduce);
  m.impl("scatter_.value_reduce", scatter_value_reduce_);
  m.impl("scatter.value_reduce_out", scatter_value_reduce_out);
  m.impl("scatter_add", scatter_add);
  m.impl("scatter_add_", scatter_add_);
  m.impl("scatter_add.out", scatter_add_out);
  m.impl("scatter_reduce.two", scatter_reduce_two);
  m.impl("scatter_reduce_.two", scatter_reduce_two_);
  m.impl("scatter_reduce.two_out", scatter_reduce_two_out);
  m.impl("index_select", index_select);
  m.impl("index_select.out", index_select_out);
  m.impl("index_add", index_add);
  m.impl("index_add_", index_add_);
  m.impl("index_add.out", index_add_out);
  m.impl("index_copy", index_copy);
  m.impl("index_copy_", index_copy_);
  m.impl("index_copy.out", index_copy_out);
  m.impl("index_fill_.int_Scalar", index_fill_scalar_);
  m.impl("index_fill_.int_Tensor", index_fill_tensor_);
  m.impl("index_fill.int_Scalar", index_fill_scalar);
  m.impl("index_fill.int_Tensor", index_fill_tensor);
  m.impl("take", take);
  m.impl("take.out", take_out);
  m.impl("put_", put_);
  m.impl("index.Tensor", index);
  m.impl("index.Tensor_out", index_out);
  m.impl("_index_put_impl_", index_put_impl_);
}

}  // namespace torch_tpu::aten
