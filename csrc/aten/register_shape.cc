// ATen glue for concatenation: torch.cat (functional and out=). torch.stack,
// hstack, vstack, ... are composite in ATen and reach cat. Type promotion,
// skipping of legacy empty 1-D tensors and the shape checks follow CPU; the
// lowering is in csrc/ops/shape/concat.cc.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TensorShape.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/shape/concat.h"

namespace torch_tpu::aten {

namespace {

struct CatPlan {
  std::vector<at::Tensor> parts;  // the tensors that take part (legacy empties dropped)
  int64_t dim = 0;
  std::vector<int64_t> shape;     // the result's
  c10::ScalarType dtype;
  c10::MemoryFormat format;       // the result's, as CPU's cat_meta picks it
};

// The memory format every input suggests (channels_last for NHWC inputs),
// else contiguous.
c10::MemoryFormat common_memory_format(const at::MaterializedITensorListRef& tensors) {
  std::optional<c10::MemoryFormat> format;
  for (const at::Tensor& t : tensors) {
    const c10::MemoryFormat f = t.suggest_memory_format();
    if (f == c10::MemoryFormat::Contiguous || (format && *format != f)) return c10::MemoryFormat::Contiguous;
    format = f;
  }
  return *format;
}

CatPlan plan_cat(const at::ITensorListRef& tensors, int64_t dim) {
  auto materialized = tensors.materialize();
  TORCH_CHECK_VALUE(!materialized.empty(), "torch.cat(): expected a non-empty list of Tensors");
  CatPlan plan;
  plan.dtype = at::native::result_type(tensors);
  for (size_t i = 0; i < materialized.size(); ++i) {
    TORCH_CHECK(materialized[i].get().dim() > 0, "zero-dimensional tensor (at position ", i,
                ") cannot be concatenated");
  }
  plan.dim = at::legacy_cat_wrap_dim(dim, materialized);
  plan.format = common_memory_format(materialized);
  const at::Tensor* first = nullptr;
  for (size_t i = 0; i < materialized.size(); ++i) {
    const at::Tensor& t = materialized[i];
    if (at::native::cat_should_skip_tensor(t)) continue;
    if (!first) {
      first = &t;
      plan.shape = t.sizes().vec();
      plan.shape[plan.dim] = 0;
    }
    at::native::check_cat_shape_except_dim(*first, t, plan.dim, static_cast<int64_t>(i));
    plan.shape[plan.dim] += t.size(plan.dim);
    plan.parts.push_back(t);
  }
  if (!first) plan.shape = {0};  // only legacy empty tensors
  return plan;
}

OpCall cat_call(const CatPlan& plan, ElementType out) {
  std::string attributes(1, static_cast<char>(out));
  attributes += std::to_string(plan.dim);
  return OpCall{"aten::cat", std::move(attributes), {plan.parts.begin(), plan.parts.end()}, {}};
}

LoweringBody cat_body(int64_t dim, ElementType out) {
  return [dim, out](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_cat(b, t, dim, out)};
  };
}

at::Tensor cat(const at::ITensorListRef& tensors, int64_t dim) {
  CatPlan plan = plan_cat(tensors, dim);
  const at::Tensor& any = *tensors.begin();
  if (plan.parts.empty()) return at::empty(plan.shape, any.options().dtype(plan.dtype), plan.format);
  const ElementType out = to_element_type(plan.dtype, "aten::cat");
  return in_memory_format(run_op(cat_call(plan, out), cat_body(plan.dim, out)).at(0), plan.format);
}

at::Tensor& cat_out(const at::ITensorListRef& tensors, int64_t dim, at::Tensor& out) {
  CatPlan plan = plan_cat(tensors, dim);
  TORCH_CHECK_TYPE(c10::canCast(plan.dtype, out.scalar_type()),
                   "torch.cat(): input types can't be cast to the desired output type ", out.scalar_type());
  // As CPU; checked before the resize, which would change an input that is
  // also the out (torch.stack([x, x], out=x)), and against every input,
  // the skipped legacy empty ones too.
  at::assert_no_internal_overlap(out);
  for (const at::Tensor& input : tensors) at::assert_no_overlap(out, input);
  if (at::native::resize_output(out, plan.shape) && plan.format != c10::MemoryFormat::Contiguous) {
    out.resize_(plan.shape, plan.format);
  }
  if (plan.parts.empty()) return out;
  const ElementType type = to_element_type(plan.dtype, "aten::cat");
  run_op_into(cat_call(plan, type), cat_body(plan.dim, type), out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cat", cat);
  m.impl("cat.out", cat_out);
}

}  // namespace torch_tpu::aten
