// ATen glue for the factories that compute values: arange (every torch.arange
// form reaches arange.start_out), linspace and eye.
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <torch/library.h>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "ops/factory/ranges.h"

namespace torch_tpu::aten {

namespace {

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                       at::Tensor& out) {
  int64_t n = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_tpu", [&] {
    n = at::native::compute_arange_size<scalar_t>(start, end, step);
  });
  at::native::resize_output(out, {n});
  const ElementType type = to_element_type(out.scalar_type(), "aten::arange");
  const ElementType compute = ops::arange_compute_type(type);
  std::string attributes(1, static_cast<char>(type));
  attributes += std::to_string(n);
  OpCall call{"aten::arange", std::move(attributes), {}, {{compute, start}, {compute, step}}};
  run_op_into(call, [n, type](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_arange(b, s[0], s[1], n, type)};
  }, out);
  return out;
}

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  const ElementType type = to_element_type(out.scalar_type(), "aten::linspace");
  // Integer outputs are computed in f32/f64 and truncated, as on CPU;
  // complex outputs in their own type.
  const ElementType compute = out.scalar_type() == at::kDouble          ? ElementType::kF64
                              : out.scalar_type() == at::kComplexDouble ? ElementType::kC128
                              : out.scalar_type() == at::kComplexFloat  ? ElementType::kC64
                                                                        : ElementType::kF32;
  std::string attributes(1, static_cast<char>(type));
  attributes += std::to_string(steps);
  OpCall call{"aten::linspace", std::move(attributes), {}, {{compute, start}, {compute, end}}};
  run_op_into(call, [steps, type](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_linspace(b, s[0], s[1], steps, type)};
  }, out);
  return out;
}

at::Tensor& eye_m_out(int64_t n, int64_t m, at::Tensor& out) {
  TORCH_CHECK(n >= 0, "n must be greater or equal to 0, got ", n);
  TORCH_CHECK(m >= 0, "m must be greater or equal to 0, got ", m);
  at::native::resize_output(out, {n, m});
  if (n == 0 || m == 0) return out;
  const ElementType type = to_element_type(out.scalar_type(), "aten::eye");
  std::string attributes(1, static_cast<char>(type));
  attributes += std::to_string(n) + "x" + std::to_string(m);
  OpCall call{"aten::eye", std::move(attributes), {}, {}};
  run_op_into(call, [n, m, type](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_eye(b, n, m, type)};
  }, out);
  return out;
}

at::Tensor& eye_out(int64_t n, at::Tensor& out) { return eye_m_out(n, n, out); }

// A Python number wrapped for an op (torch.where(mask, x, -inf) makes one of
// x's dtype). CPU casts a float into a floating dtype without the overflow
// check fill_ makes (1e6 becomes inf in f16, 448 in float8_e4m3fn);
// integers keep the check.
at::Tensor scalar_tensor(const c10::Scalar& s, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const c10::ScalarType type = dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  at::Tensor t = at::empty({}, at::TensorOptions().dtype(type).layout(layout).device(device));
  const bool cast = c10::isFloatingType(type) && (s.isFloatingPoint() || s.isIntegral(false));
  return t.fill_(cast ? cast_scalar(s, type) : s);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linspace.out", linspace_out);
  m.impl("eye.out", eye_out);
  m.impl("eye.m_out", eye_m_out);
  m.impl("arange.start_out", arange_out);
  m.impl("scalar_tensor", scalar_tensor);
}

}  // namespace torch_tpu::aten
