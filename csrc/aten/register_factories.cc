// ATen glue for the factories that compute values: arange (every torch.arange
// form reaches arange.start_out), range, linspace, logspace, eye and
// kaiser_window.
#include <ATen/AccumulateType.h>
#include <ATen/Dispatch.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/RangeUtils.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/abs.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/div.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/i0.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/ones.h>
#include <ATen/ops/rsub.h>
#include <ATen/ops/sqrt.h>
#include <ATen/ops/square.h>
#include <ATen/ops/sub.h>
#include <ATen/ops/linspace.h>
#include <ATen/ops/pow.h>
#include <torch/library.h>

#include <cmath>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "ops/factory/ranges.h"

namespace torch_tpu::aten {

namespace {

// out[i] = start + i * step for n elements, stepped in arange's compute
// type (the result's own, f32 for the 16-bit floats).
void write_progression(const char* op, const c10::Scalar& start, const c10::Scalar& step, int64_t n,
                       at::Tensor& out) {
  at::native::resize_output(out, {n});
  const ElementType type = to_element_type(out.scalar_type(), op);
  const ElementType compute = ops::arange_compute_type(type);
  std::string attributes(1, static_cast<char>(type));
  attributes += std::to_string(n);
  OpCall call{op, std::move(attributes), {}, {{compute, start}, {compute, step}}};
  run_op_into(call, [n, type](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_arange(b, s[0], s[1], n, type)};
  }, out);
}

at::Tensor& arange_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step,
                       at::Tensor& out) {
  int64_t n = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "arange_tpu", [&] {
    n = at::native::compute_arange_size<scalar_t>(start, end, step);
  });
  write_progression("aten::arange", start, step, n, out);
  return out;
}

// The deprecated torch.range, end included: its length and checks as CPU's
// kernel computes them, in the result's accumulate type.
at::Tensor& range_out(const c10::Scalar& start, const c10::Scalar& end, const c10::Scalar& step, at::Tensor& out) {
  int64_t n = 0;
  AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, out.scalar_type(), "range_tpu", [&] {
    using accscalar_t = at::acc_type<scalar_t, false>;
    const auto first = start.to<accscalar_t>(), last = end.to<accscalar_t>(), stride = step.to<accscalar_t>();
    TORCH_CHECK(stride > 0 || stride < 0, "aten::range: step must be nonzero");
    TORCH_CHECK(std::isfinite(static_cast<double>(first)) && std::isfinite(static_cast<double>(last)),
                "aten::range: unsupported range: ", first, " -> ", last);
    TORCH_CHECK((stride > 0 && last >= first) || (stride < 0 && last <= first),
                "aten::range: upper bound and lower bound inconsistent with step sign");
    n = static_cast<int64_t>(((last - first) / stride) + 1);
  });
  write_progression("aten::range", start, step, n, out);
  return out;
}

// linspace's ends and step as CPU computes them, in the type its kernel
// steps in: double for integer results (the ends first cast to the result's
// type), the result's own type for floats (f32 for the 16-bit ones, which
// CPU steps in f16 / bf16 arithmetic) and complex numbers.
struct Spacing {
  ElementType type;
  c10::Scalar start, end, step;
  std::vector<ScalarInput> scalars() const { return {{type, start}, {type, end}, {type, step}}; }
};

template <typename T>
Spacing spaced(ElementType type, T start, T end, int64_t steps) {
  const T step = steps > 1 ? (end - start) / static_cast<T>(steps - 1) : T(0);
  return {type, c10::Scalar(start), c10::Scalar(end), c10::Scalar(step)};
}

Spacing linear_spacing(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, c10::ScalarType out) {
  switch (out) {
    case at::kDouble: return spaced<double>(ElementType::kF64, start.to<double>(), end.to<double>(), steps);
    case at::kComplexDouble:
      return spaced<c10::complex<double>>(ElementType::kC128, start.to<c10::complex<double>>(),
                                          end.to<c10::complex<double>>(), steps);
    case at::kComplexFloat:
      return spaced<c10::complex<float>>(ElementType::kC64, start.to<c10::complex<float>>(),
                                         end.to<c10::complex<float>>(), steps);
    default: break;
  }
  if (c10::isIntegralType(out, /*includeBool=*/true)) {
    const double s = cast_scalar(checked_cast_scalar(start, out), at::kDouble).toDouble();
    const double e = cast_scalar(checked_cast_scalar(end, out), at::kDouble).toDouble();
    return spaced<double>(ElementType::kF64, s, e, steps);
  }
  const auto s = static_cast<float>(cast_scalar(start, out).toDouble());
  const auto e = static_cast<float>(cast_scalar(end, out).toDouble());
  return spaced<float>(ElementType::kF32, s, e, steps);
}

at::Tensor& linspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  if (out.scalar_type() == at::kBool) {
    // CPU fills a single step with start before its kernel refuses bool.
    if (steps == 1) return out.fill_(start);
    not_implemented_for("linspace_cpu", at::kBool);
  }
  const ElementType type = to_element_type(out.scalar_type(), "aten::linspace");
  const Spacing spacing = linear_spacing(start, end, steps, out.scalar_type());
  std::string attributes(1, static_cast<char>(type));
  attributes += std::to_string(steps);
  OpCall call{"aten::linspace", std::move(attributes), {}, spacing.scalars()};
  run_op_into(call, [steps, type](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_linspace(b, s[0], s[1], s[2], steps, type)};
  }, out);
  return out;
}

at::Tensor& logspace_out(const c10::Scalar& start, const c10::Scalar& end, int64_t steps, double base,
                         at::Tensor& out) {
  TORCH_CHECK(steps >= 0, "number of steps must be non-negative");
  at::native::resize_output(out, {steps});
  if (steps == 0) return out;
  if (out.scalar_type() == at::kBool) {
    if (steps == 1) return out.fill_(std::pow(base, start.to<double>()));  // as CPU, before its kernel
    not_implemented_for("logspace_cpu", at::kBool);
  }
  const ElementType type = to_element_type(out.scalar_type(), "aten::logspace");
  if (out.is_complex()) {  // complex exponents: base ** linspace, as CPU's complex path
    out.copy_(at::pow(base, at::linspace(start, end, steps, out.options())));
    return out;
  }
  // CPU: the ends in the result's dtype, the exponents in double, computed
  // here as CPU computes them (a device program may fuse a multiply and a
  // subtract, and 10 ** -4e-16 truncates to 0 where 10 ** 0 is 1).
  const double s = cast_scalar(checked_cast_scalar(start, out.scalar_type()), at::kDouble).toDouble();
  const double e = cast_scalar(checked_cast_scalar(end, out.scalar_type()), at::kDouble).toDouble();
  const double step = steps > 1 ? (e - s) / static_cast<double>(steps - 1) : 0.0;
  at::Tensor exponents = at::empty({steps}, at::TensorOptions().dtype(at::kDouble));
  double* x = exponents.data_ptr<double>();
  for (int64_t i = 0; i < steps; ++i) x[i] = i < steps / 2 ? s + step * i : e - step * (steps - i - 1);
  if (steps == 1) x[0] = start.to<double>();  // CPU: base ** start, start not cast first
  std::string attributes(1, static_cast<char>(type));
  OpCall call{"aten::logspace", std::move(attributes), {exponents.to(out.device())}, {{ElementType::kF64, base}}};
  run_op_into(call, [type](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& v) {
    return std::vector<hlo::Value>{ops::lower_logspace(b, t[0], v[0], type)};
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
// x's dtype). CPU casts a number into a 16- or 8-bit float without the
// overflow check fill_ makes (1e6 becomes inf in f16, 448 in
// float8_e4m3fn: c10's check knows only the C++ float types); float32 and
// the integers keep the check (1e39 into float32 raises).
at::Tensor scalar_tensor(const c10::Scalar& s, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const c10::ScalarType type = dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  at::Tensor t = at::empty({}, at::TensorOptions().dtype(type).layout(layout).device(device));
  const bool cast = c10::isFloatingType(type) && type != c10::kFloat && type != c10::kDouble &&
                    (s.isFloatingPoint() || s.isIntegral(false));
  return t.fill_(cast ? cast_scalar(s, type) : s);
}

// torch.kaiser_window: PyTorch computes it with a DispatchStub, which has no
// tpu kernel, so the overload every form reaches is written here from tpu
// ops, in the result's opmath type (f32 for the 16-bit floats), as CPU's
// kernel computes it: I0(beta * sqrt(|1 - ((i - a) / a)^2|)) / I0(beta),
// a = (n - 1) / 2, with n + 1 points cut to n when periodic.
at::Tensor kaiser_window(int64_t length, bool periodic, double beta, std::optional<c10::ScalarType> dtype,
                         std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                         std::optional<bool> pin_memory) {
  const c10::ScalarType type = dtype.value_or(c10::typeMetaToScalarType(c10::get_default_dtype()));
  const auto options = at::TensorOptions().dtype(type).layout(layout).device(device).pinned_memory(pin_memory);
  TORCH_CHECK(options.layout() != c10::kSparse, "kaiser_window is not implemented for sparse types, got: ", options);
  TORCH_CHECK(c10::isFloatingType(type), "kaiser_window expects floating point dtypes, got: ", options);
  TORCH_CHECK(length >= 0, "kaiser_window requires non-negative window_length, got window_length=", length);
  if (length == 0) return at::empty({0}, options);
  if (length == 1) return at::ones({1}, options);
  const int64_t points = periodic ? length + 1 : length;
  const c10::ScalarType opmath = c10::isReducedFloatingType(type) ? c10::kFloat : type;
  const double alpha = (points - 1) / 2.0;
  const at::Tensor ratio = at::div(at::sub(at::arange(points, options.dtype(opmath)), alpha), alpha);
  const at::Tensor root = at::sqrt(at::abs(at::rsub(at::square(ratio), 1)));
  const at::Tensor scale = at::i0(at::full({}, beta, options.dtype(opmath)));
  const at::Tensor window = at::div(at::i0(at::mul(root, beta)), scale).to(type);
  return periodic ? window.narrow(0, 0, length) : window;
}

// The shorter forms call the native function directly, not the dispatcher.
at::Tensor kaiser_window_periodic(int64_t length, bool periodic, std::optional<c10::ScalarType> dtype,
                                  std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                  std::optional<bool> pin_memory) {
  return kaiser_window(length, periodic, 12.0, dtype, layout, device, pin_memory);
}

at::Tensor kaiser_window_default(int64_t length, std::optional<c10::ScalarType> dtype,
                                 std::optional<c10::Layout> layout, std::optional<c10::Device> device,
                                 std::optional<bool> pin_memory) {
  return kaiser_window(length, true, 12.0, dtype, layout, device, pin_memory);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("kaiser_window", kaiser_window_default);
  m.impl("kaiser_window.periodic", kaiser_window_periodic);
  m.impl("kaiser_window.beta", kaiser_window);
  m.impl("linspace.out", linspace_out);
  m.impl("logspace.out", logspace_out);
  m.impl("eye.out", eye_out);
  m.impl("eye.m_out", eye_m_out);
  m.impl("arange.start_out", arange_out);
  m.impl("range.out", range_out);
  m.impl("scalar_tensor", scalar_tensor);
}

}  // namespace torch_tpu::aten
