// ATen glue for elu (celu and selu go through it), hardswish, hardsigmoid,
// mish, log_sigmoid, glu, prelu, softshrink, hardshrink and rrelu, with
// the backward ops autograd calls for them. Scalars (alpha,
// lambd, ...) are runtime inputs. Lowerings:
// csrc/ops/elementwise/more_activations.cc.
#include <ATen/ExpandUtils.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/leaky_relu.h>
#include <ATen/ops/leaky_relu_backward.h>
#include <ATen/ops/mul.h>
#include <ATen/ops/narrow.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/where.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/elementwise/more_activations.h"

namespace torch_tpu::aten {

namespace {

using c10::ScalarType;

void append_type(std::string& attributes, ScalarType t) { attributes.push_back(static_cast<char>(t)); }

struct Prepared {
  OpCall call;
  LoweringBody body;
  ScalarType result;
  std::vector<int64_t> shape;
};

at::Tensor run(const Prepared& p) { return in_iterator_layout(run_op(p.call, p.body).at(0), p.call.tensors); }

// In-place and out= forms of the forward ops want the input's dtype
// exactly, like their CPU kernels; backward grad_input= casts.
at::Tensor& run_into(const Prepared& p, at::Tensor& out, bool inplace, bool exact) {
  if (exact && !inplace) {
    check_exact(p.result, out);
  } else {
    check_castable(p.result, out);
  }
  prepare_out(out, p.shape, inplace, p.call.tensors);
  run_op_into(p.call, p.body, out);
  return out;
}

// A forward op on one float tensor with runtime scalars in the opmath type.
Prepared forward_call(const char* name, const char* kernel, const at::Tensor& self,
                      const std::vector<c10::Scalar>& scalars) {
  const ScalarType t = self.scalar_type();
  check_float(kernel, t);
  Prepared p{OpCall{name, "", {self}, {}}, {}, t, self.sizes().vec()};
  for (const c10::Scalar& s : scalars) p.call.scalars.push_back({to_element_type(opmath(t)), s});
  append_type(p.call.attributes, t);
  return p;
}

// A backward op: grad and the saved tensor promote and broadcast together.
Prepared backward_call(const char* name, const char* kernel, const at::Tensor& grad, const at::Tensor& saved,
                       const std::vector<c10::Scalar>& scalars) {
  check_tpu(grad, name);
  check_tpu(saved, name);
  Prepared p{OpCall{name, "", {grad, saved}, {}}, {}, at::result_type(grad, saved),
             at::infer_size(grad.sizes(), saved.sizes())};
  check_float(kernel, p.result);
  for (const c10::Scalar& s : scalars) p.call.scalars.push_back({to_element_type(opmath(p.result)), s});
  append_type(p.call.attributes, p.result);
  return p;
}

using Values = std::vector<hlo::Value>;

// ---- elu --------------------------------------------------------------------------

Prepared elu_call(const at::Tensor& self, const c10::Scalar& alpha, const c10::Scalar& scale,
                  const c10::Scalar& input_scale) {
  Prepared p = forward_call("aten::elu", "elu_cpu", self, {alpha, scale, input_scale});
  p.body = [](hlo::Builder& b, const Values& t, const Values& s) {
    return Values{ops::lower_elu(b, t[0], s[0], s[1], s[2])};
  };
  return p;
}

at::Tensor elu(const at::Tensor& self, const c10::Scalar& a, const c10::Scalar& s, const c10::Scalar& i) {
  return run(elu_call(self, a, s, i));
}
at::Tensor& elu_(at::Tensor& self, const c10::Scalar& a, const c10::Scalar& s, const c10::Scalar& i) {
  return run_into(elu_call(self, a, s, i), self, true, true);
}
at::Tensor& elu_out(const at::Tensor& self, const c10::Scalar& a, const c10::Scalar& s, const c10::Scalar& i,
                    at::Tensor& out) {
  return run_into(elu_call(self, a, s, i), out, false, true);
}

Prepared elu_backward_call(const at::Tensor& grad, const c10::Scalar& alpha, const c10::Scalar& scale,
                           const c10::Scalar& input_scale, bool is_result, const at::Tensor& saved) {
  TORCH_CHECK(!is_result || alpha.to<double>() >= 0.0,
              "In-place elu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead.");
  Prepared p = backward_call("aten::elu_backward", "elu_backward_cpu", grad, saved, {alpha, scale, input_scale});
  p.call.attributes.push_back(is_result ? 'r' : 'x');
  p.body = [is_result, out = to_element_type(p.result)](hlo::Builder& b, const Values& t, const Values& s) {
    return Values{ops::lower_elu_backward(b, t[0], t[1], s[0], s[1], s[2], is_result, out)};
  };
  return p;
}

at::Tensor elu_backward(const at::Tensor& grad, const c10::Scalar& a, const c10::Scalar& s, const c10::Scalar& i,
                        bool is_result, const at::Tensor& saved) {
  return run(elu_backward_call(grad, a, s, i, is_result, saved));
}
at::Tensor& elu_backward_out(const at::Tensor& grad, const c10::Scalar& a, const c10::Scalar& s,
                             const c10::Scalar& i, bool is_result, const at::Tensor& saved, at::Tensor& grad_input) {
  return run_into(elu_backward_call(grad, a, s, i, is_result, saved), grad_input, false, false);
}

// ---- hardswish, hardsigmoid, mish ------------------------------------------------------

enum class Plain { kHardswish, kHardsigmoid, kMish };

Prepared plain_call(Plain op, const at::Tensor& self) {
  static const char* const kNames[] = {"aten::hardswish", "aten::hardsigmoid", "aten::mish"};
  static const char* const kKernels[] = {"hardswish_cpu", "hardsigmoid_cpu", "mish_cpu"};
  Prepared p = forward_call(kNames[static_cast<int>(op)], kKernels[static_cast<int>(op)], self, {});
  p.body = [op](hlo::Builder& b, const Values& t, const Values&) {
    switch (op) {
      case Plain::kHardswish: return Values{ops::lower_hardswish(b, t[0])};
      case Plain::kHardsigmoid: return Values{ops::lower_hardsigmoid(b, t[0])};
      case Plain::kMish: break;
    }
    return Values{ops::lower_mish(b, t[0])};
  };
  return p;
}

template <Plain Op>
at::Tensor plain(const at::Tensor& self) {
  return run(plain_call(Op, self));
}
template <Plain Op>
at::Tensor& plain_(at::Tensor& self) {
  return run_into(plain_call(Op, self), self, true, true);
}
template <Plain Op>
at::Tensor& plain_out(const at::Tensor& self, at::Tensor& out) {
  return run_into(plain_call(Op, self), out, false, true);
}

enum class PlainBackward { kHardswish, kHardsigmoid, kLogSigmoid, kMish };

Prepared plain_backward_call(PlainBackward op, const at::Tensor& grad, const at::Tensor& self) {
  static const char* const kNames[] = {"aten::hardswish_backward", "aten::hardsigmoid_backward",
                                       "aten::log_sigmoid_backward", "aten::mish_backward"};
  static const char* const kKernels[] = {"hardswish_backward_cpu", "hardsigmoid_backward",
                                         "log_sigmoid_backward_cpu", "mish_backward_cpu"};
  Prepared p = backward_call(kNames[static_cast<int>(op)], kKernels[static_cast<int>(op)], grad, self, {});
  p.body = [op, out = to_element_type(p.result)](hlo::Builder& b, const Values& t, const Values&) {
    switch (op) {
      case PlainBackward::kHardswish: return Values{ops::lower_hardswish_backward(b, t[0], t[1], out)};
      case PlainBackward::kHardsigmoid: return Values{ops::lower_hardsigmoid_backward(b, t[0], t[1], out)};
      case PlainBackward::kMish: return Values{ops::lower_mish_backward(b, t[0], t[1], out)};
      case PlainBackward::kLogSigmoid: break;
    }
    return Values{ops::lower_log_sigmoid_backward(b, t[0], t[1], out)};
  };
  return p;
}

template <PlainBackward Op>
at::Tensor plain_backward(const at::Tensor& grad, const at::Tensor& self) {
  return run(plain_backward_call(Op, grad, self));
}
template <PlainBackward Op>
at::Tensor& plain_backward_out(const at::Tensor& grad, const at::Tensor& self, at::Tensor& grad_input) {
  return run_into(plain_backward_call(Op, grad, self), grad_input, false, false);
}

// ---- log_sigmoid ---------------------------------------------------------------------------

Prepared log_sigmoid_call(const at::Tensor& self) {
  Prepared p = forward_call("aten::log_sigmoid_forward", "log_sigmoid_cpu", self, {});
  p.body = [](hlo::Builder& b, const Values& t, const Values&) {
    auto [output, buffer] = ops::lower_log_sigmoid(b, t[0]);
    return Values{output, buffer};
  };
  return p;
}

std::tuple<at::Tensor, at::Tensor> log_sigmoid_forward(const at::Tensor& self) {
  Prepared p = log_sigmoid_call(self);
  auto outs = run_op(p.call, p.body);
  return {outs.at(0), outs.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> log_sigmoid_forward_out(const at::Tensor& self, at::Tensor& output,
                                                             at::Tensor& buffer) {
  Prepared p = log_sigmoid_call(self);
  check_exact(p.result, output);
  check_exact(p.result, buffer);
  auto outs = run_op(p.call, p.body);
  at::native::resize_output(output, self.sizes());
  at::native::resize_output(buffer, self.sizes());
  output.copy_(outs.at(0));
  buffer.copy_(outs.at(1));
  return {output, buffer};
}

// The backward recomputes exp(-|x|) from x rather than reading the buffer
// (which a CUDA-style caller may leave empty).
at::Tensor log_sigmoid_backward(const at::Tensor& grad, const at::Tensor& self, const at::Tensor&) {
  return plain_backward<PlainBackward::kLogSigmoid>(grad, self);
}
at::Tensor& log_sigmoid_backward_out(const at::Tensor& grad, const at::Tensor& self, const at::Tensor&,
                                     at::Tensor& grad_input) {
  return plain_backward_out<PlainBackward::kLogSigmoid>(grad, self, grad_input);
}

// ---- glu ------------------------------------------------------------------------------------

int64_t glu_dim(const at::Tensor& self, int64_t dim) {
  TORCH_CHECK(self.dim() > 0, "glu does not support scalars because halving size must be even");
  const int64_t d = c10::maybe_wrap_dim(dim, self.dim());
  TORCH_CHECK(self.size(d) % 2 == 0, "Halving dimension must be even, but dimension ", d, " is size ",
              self.size(d));
  return d;
}

Prepared glu_call(const at::Tensor& self, int64_t dim) {
  const int64_t d = glu_dim(self, dim);
  Prepared p = forward_call("aten::glu", "glu_cpu", self, {});
  p.shape[d] /= 2;
  p.call.attributes += std::to_string(d);
  p.body = [d](hlo::Builder& b, const Values& t, const Values&) { return Values{ops::lower_glu(b, t[0], d)}; };
  return p;
}

at::Tensor glu(const at::Tensor& self, int64_t dim) {
  at::Tensor result = run(glu_call(self, dim));
  if (self.is_contiguous()) return result;
  // CPU's TensorIterator runs over the two halves: the result takes their layout.
  const int64_t d = glu_dim(self, dim), half = self.size(d) / 2;
  return in_iterator_layout(result, {self.narrow(d, 0, half), self.narrow(d, half, half)});
}
at::Tensor& glu_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  return run_into(glu_call(self, dim), out, false, true);
}

Prepared glu_backward_call(const at::Tensor& grad, const at::Tensor& self, int64_t dim) {
  const int64_t d = glu_dim(self, dim);
  check_tpu(grad, "aten::glu_backward");
  check_tpu(self, "aten::glu_backward");
  std::vector<int64_t> half = self.sizes().vec();
  half[d] /= 2;
  TORCH_CHECK(grad.sizes() == c10::IntArrayRef(half), "glu_backward: grad_output has shape ", grad.sizes(),
              " but the forward's output has shape ", c10::IntArrayRef(half));
  Prepared p{OpCall{"aten::glu_backward", std::to_string(d), {grad, self}, {}}, {},
             at::result_type(grad, self), self.sizes().vec()};
  check_float("glu_backward_cpu", p.result);
  append_type(p.call.attributes, p.result);
  p.body = [d, out = to_element_type(p.result)](hlo::Builder& b, const Values& t, const Values&) {
    return Values{ops::lower_glu_backward(b, t[0], t[1], d, out)};
  };
  return p;
}

at::Tensor glu_backward(const at::Tensor& grad, const at::Tensor& self, int64_t dim) {
  return run(glu_backward_call(grad, self, dim));
}
at::Tensor& glu_backward_out(const at::Tensor& grad, const at::Tensor& self, int64_t dim, at::Tensor& grad_input) {
  return run_into(glu_backward_call(grad, self, dim), grad_input, false, false);
}

// ---- prelu ------------------------------------------------------------------------------------

at::Tensor prelu_kernel(const at::Tensor& self, const at::Tensor& weight) {
  check_tpu(weight, "aten::_prelu_kernel");
  const ScalarType t = at::result_type(self, weight);
  check_float("prelu_cpu", t);
  OpCall call{"aten::_prelu_kernel", "", {self, weight}, {}};
  append_type(call.attributes, t);
  at::infer_size(self.sizes(), weight.sizes());
  at::Tensor result = run_op(call, [out = to_element_type(t)](hlo::Builder& b, const Values& v, const Values&) {
                        return Values{ops::lower_prelu(b, v[0], v[1], out)};
                      }).at(0);
  return in_iterator_layout(result, call.tensors);
}

std::tuple<at::Tensor, at::Tensor> prelu_kernel_backward(const at::Tensor& grad, const at::Tensor& self,
                                                         const at::Tensor& weight) {
  check_tpu(grad, "aten::_prelu_kernel_backward");
  check_tpu(weight, "aten::_prelu_kernel_backward");
  const ScalarType t =
      c10::promoteTypes(c10::promoteTypes(self.scalar_type(), weight.scalar_type()), grad.scalar_type());
  check_float("prelu_backward_cpu", t);
  at::infer_size(at::infer_size(self.sizes(), weight.sizes()), grad.sizes());
  OpCall call{"aten::_prelu_kernel_backward", "", {grad, self, weight}, {}};
  append_type(call.attributes, t);
  auto outs = run_op(call, [out = to_element_type(t)](hlo::Builder& b, const Values& v, const Values&) {
    auto [dx, dw] = ops::lower_prelu_backward(b, v[0], v[1], v[2], out);
    return Values{dx, dw};
  });
  return {in_iterator_layout(outs.at(0), call.tensors), in_iterator_layout(outs.at(1), call.tensors)};
}

// ---- softshrink / hardshrink --------------------------------------------------------------------

// CPU's lambd range check (softshrink): 0 <= lambd <= the dtype's largest.
void check_lambd(const c10::Scalar& lambd, ScalarType t) {
  double hi = std::numeric_limits<double>::max();
  if (t == ScalarType::Float) hi = std::numeric_limits<float>::max();
  if (t == ScalarType::BFloat16) hi = static_cast<float>(std::numeric_limits<c10::BFloat16>::max());
  if (t == ScalarType::Half) hi = static_cast<float>(std::numeric_limits<c10::Half>::max());
  const double l = lambd.to<double>();
  TORCH_CHECK(l >= 0 && l <= hi, "lambda must be in range [0, ", hi, "] for input dtype ", t, ", but found ",
              lambd);
}

enum class Shrink { kSoft, kHard };

Prepared shrink_call(Shrink op, const at::Tensor& self, const c10::Scalar& lambd) {
  const bool soft = op == Shrink::kSoft;
  Prepared p = forward_call(soft ? "aten::softshrink" : "aten::hardshrink", soft ? "softshrink_check" : "hardshrink_cpu",
                            self, {lambd});
  if (soft) check_lambd(lambd, self.scalar_type());
  // CPU's hardshrink compares with lambd in the tensor's dtype (softshrink in f32).
  if (!soft) p.call.scalars.at(0).value = cast_scalar(lambd, self.scalar_type());
  p.body = [soft](hlo::Builder& b, const Values& t, const Values& s) {
    return Values{soft ? ops::lower_softshrink(b, t[0], s[0]) : ops::lower_hardshrink(b, t[0], s[0])};
  };
  return p;
}

template <Shrink Op>
at::Tensor shrink(const at::Tensor& self, const c10::Scalar& lambd) {
  return run(shrink_call(Op, self, lambd));
}
template <Shrink Op>
at::Tensor& shrink_out(const at::Tensor& self, const c10::Scalar& lambd, at::Tensor& out) {
  return run_into(shrink_call(Op, self, lambd), out, false, true);
}

Prepared shrink_backward_call(Shrink op, const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd) {
  const bool soft = op == Shrink::kSoft;
  Prepared p = backward_call(soft ? "aten::softshrink_backward" : "aten::hardshrink_backward",
                             soft ? "softshrink_backward_cpu" : "hardshrink_backward_cpu", grad, self, {lambd});
  // Both backward kernels compare with lambd in the result's dtype, as CPU's do.
  p.call.scalars.at(0).value = cast_scalar(lambd, p.result);
  p.body = [out = to_element_type(p.result)](hlo::Builder& b, const Values& t, const Values& s) {
    return Values{ops::lower_shrink_backward(b, t[0], t[1], s[0], out)};
  };
  return p;
}

template <Shrink Op>
at::Tensor shrink_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd) {
  return run(shrink_backward_call(Op, grad, self, lambd));
}
template <Shrink Op>
at::Tensor& shrink_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lambd,
                                at::Tensor& grad_input) {
  return run_into(shrink_backward_call(Op, grad, self, lambd), grad_input, false, false);
}

// ---- rrelu ------------------------------------------------------------------------------------
//
// Training mode gives each element at or below zero a slope drawn uniformly
// from [lower, upper] by the device generator, and writes the slopes (1
// for positive elements) to `noise`, which the backward multiplies the
// gradient by (PyTorch's rrelu_with_noise_backward), as CPU's and CUDA's
// kernels do. It is composed of uniform_, where and mul, each lowered once.
// Eval mode is leaky_relu with the mean slope, as on CPU.

c10::Scalar mean_slope(const c10::Scalar& lower, const c10::Scalar& upper) {
  return (lower.to<double>() + upper.to<double>()) / 2;
}

// Draws the slopes into `noise` (resized to self's shape).
void draw_slopes(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower, const c10::Scalar& upper,
                 std::optional<at::Generator> generator) {
  TORCH_CHECK(noise.device() == self.device(), "aten::rrelu_with_noise: noise is on ", noise.device(),
              ", self on ", self.device());
  TORCH_CHECK(noise.scalar_type() == self.scalar_type(), "aten::rrelu_with_noise: noise has dtype ",
              noise.scalar_type(), ", self ", self.scalar_type());
  at::Tensor slopes = at::empty_like(self);
  slopes.uniform_(lower.to<double>(), upper.to<double>(), std::move(generator));
  at::native::resize_output(noise, self.sizes());
  noise.copy_(at::where(self.le(0), slopes, 1));
}

at::Tensor rrelu_with_noise(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower,
                            const c10::Scalar& upper, bool training, std::optional<at::Generator> generator) {
  if (!training) return at::leaky_relu(self, mean_slope(lower, upper));
  draw_slopes(self, noise, lower, upper, std::move(generator));
  return at::mul(self, noise);
}
at::Tensor& rrelu_with_noise_(at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower,
                              const c10::Scalar& upper, bool training, std::optional<at::Generator> generator) {
  if (!training) return at::leaky_relu_(self, mean_slope(lower, upper));
  draw_slopes(self, noise, lower, upper, std::move(generator));
  return self.mul_(noise);
}
at::Tensor& rrelu_with_noise_out(const at::Tensor& self, at::Tensor& noise, const c10::Scalar& lower,
                                 const c10::Scalar& upper, bool training, std::optional<at::Generator> generator,
                                 at::Tensor& out) {
  if (!training) return at::leaky_relu_out(out, self, mean_slope(lower, upper));
  draw_slopes(self, noise, lower, upper, std::move(generator));
  return at::mul_out(out, self, noise);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("elu", elu);
  m.impl("elu_", elu_);
  m.impl("elu.out", elu_out);
  m.impl("elu_backward", elu_backward);
  m.impl("elu_backward.grad_input", elu_backward_out);
  m.impl("hardswish", plain<Plain::kHardswish>);
  m.impl("hardswish_", plain_<Plain::kHardswish>);
  m.impl("hardswish.out", plain_out<Plain::kHardswish>);
  m.impl("hardswish_backward", plain_backward<PlainBackward::kHardswish>);
  m.impl("hardsigmoid", plain<Plain::kHardsigmoid>);
  m.impl("hardsigmoid_", plain_<Plain::kHardsigmoid>);
  m.impl("hardsigmoid.out", plain_out<Plain::kHardsigmoid>);
  m.impl("hardsigmoid_backward", plain_backward<PlainBackward::kHardsigmoid>);
  m.impl("hardsigmoid_backward.grad_input", plain_backward_out<PlainBackward::kHardsigmoid>);
  m.impl("mish_backward", plain_backward<PlainBackward::kMish>);
  m.impl("mish", plain<Plain::kMish>);
  m.impl("mish_", plain_<Plain::kMish>);
  m.impl("mish.out", plain_out<Plain::kMish>);
  m.impl("log_sigmoid_forward", log_sigmoid_forward);
  m.impl("log_sigmoid_forward.output", log_sigmoid_forward_out);
  m.impl("log_sigmoid_backward", log_sigmoid_backward);
  m.impl("log_sigmoid_backward.grad_input", log_sigmoid_backward_out);
  m.impl("glu", glu);
  m.impl("glu.out", glu_out);
  m.impl("glu_backward", glu_backward);
  m.impl("glu_backward.grad_input", glu_backward_out);
  m.impl("_prelu_kernel", prelu_kernel);
  m.impl("_prelu_kernel_backward", prelu_kernel_backward);
  m.impl("softshrink", shrink<Shrink::kSoft>);
  m.impl("softshrink.out", shrink_out<Shrink::kSoft>);
  m.impl("softshrink_backward", shrink_backward<Shrink::kSoft>);
  m.impl("softshrink_backward.grad_input", shrink_backward_out<Shrink::kSoft>);
  m.impl("hardshrink", shrink<Shrink::kHard>);
  m.impl("hardshrink.out", shrink_out<Shrink::kHard>);
  m.impl("hardshrink_backward", shrink_backward<Shrink::kHard>);
  m.impl("hardshrink_backward.grad_input", shrink_backward_out<Shrink::kHard>);
  m.impl("rrelu_with_noise", rrelu_with_noise);
  m.impl("rrelu_with_noise_", rrelu_with_noise_);
  m.impl("rrelu_with_noise.out", rrelu_with_noise_out);
}

}  // namespace torch_tpu::aten
