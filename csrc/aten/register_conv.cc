// ATen glue for convolutions. at::_convolution (behind conv1d/2d/3d,
// conv_transpose*, F.conv* with padding='same', nn.Conv*) checks the shapes
// and sends a PrivateUse1 tensor to the "overrideable" backend:
// convolution_overrideable and, from autograd's convolution_backward,
// convolution_backward_overrideable. Both lower through
// csrc/ops/nn/convolution.cc.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <array>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/matmul_precision.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/nn/convolution.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

std::vector<int64_t> expand(c10::SymIntArrayRef v, int64_t n, const char* what) {
  const auto values = C10_AS_INTARRAYREF_SLOW(v);
  TORCH_CHECK(values.size() == 1 || static_cast<int64_t>(values.size()) == n, "convolution: expected ", what,
              " to be a single integer value or a list of ", n, " values to match the convolution dimensions, but got ",
              what, "=", values);
  std::vector<int64_t> out(n);
  for (int64_t i = 0; i < n; ++i) out[i] = values.size() == 1 ? values[0] : values[i];
  return out;
}

ops::ConvParams params(const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
                       c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
                       c10::SymIntArrayRef output_padding, const c10::SymInt& groups) {
  TORCH_CHECK(input.dim() >= 3, "Expected 3D (unbatched) or 4D (batched) input to conv, but got input of size: ",
              input.sizes());
  TORCH_CHECK(weight.dim() == input.dim(), "Expected ", input.dim(), "-dimensional weight for ", input.dim(),
              "-dimensional input of size ", input.sizes(), ", but got weight of size ", weight.sizes());
  const int64_t n = input.dim() - 2;
  ops::ConvParams p;
  p.stride = expand(stride, n, "stride");
  p.padding = expand(padding, n, "padding");
  p.dilation = expand(dilation, n, "dilation");
  p.transposed = transposed;
  p.output_padding = transposed ? expand(output_padding, n, "output_padding") : std::vector<int64_t>(n, 0);
  p.groups = groups.expect_int();
  p.f32_precision = float32_precision_for(input.scalar_type());
  TORCH_CHECK(p.groups > 0, "non-positive groups is not supported");
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(p.stride[i] > 0, "non-positive stride is not supported");
    TORCH_CHECK(p.padding[i] >= 0, "negative padding is not supported");
    TORCH_CHECK(p.dilation[i] > 0, "dilation should be greater than zero");
    TORCH_CHECK(p.output_padding[i] >= 0, "negative output_padding is not supported");
    TORCH_CHECK(p.output_padding[i] < p.stride[i] || p.output_padding[i] < p.dilation[i],
                "output padding must be smaller than either stride or dilation, but got output_padding: ",
                c10::IntArrayRef(p.output_padding), ", stride: ", c10::IntArrayRef(p.stride),
                ", dilation: ", c10::IntArrayRef(p.dilation));
  }
  const int64_t in_channels = input.size(1);
  if (transposed) {
    TORCH_CHECK(weight.size(0) == in_channels, "Given transposed=1, weight of size ", weight.sizes(),
                ", expected input", input.sizes(), " to have ", weight.size(0), " channels, but got ", in_channels,
                " channels instead");
    TORCH_CHECK(in_channels % p.groups == 0, "Given groups=", p.groups, ", expected weight to be divisible by ",
                p.groups, " at dimension 0, but got weight of size ", weight.sizes(), " instead");
  } else {
    TORCH_CHECK(weight.size(0) % p.groups == 0 && weight.size(0) >= p.groups, "Given groups=", p.groups,
                ", expected weight to be at least ", p.groups, " at dimension 0, but got weight of size ",
                weight.sizes(), " instead");
    TORCH_CHECK(weight.size(1) * p.groups == in_channels, "Given groups=", p.groups, ", weight of size ",
                weight.sizes(), ", expected input", input.sizes(), " to have ", weight.size(1) * p.groups,
                " channels, but got ", in_channels, " channels instead");
  }
  return p;
}

// CPU convolves floats and integers (not bool); gradients need floats.
void check_dtypes(const at::Tensor& input, const at::Tensor& weight, const at::Tensor* bias, const char* op,
                  bool integers) {
  const c10::ScalarType t = input.scalar_type();
  const bool ok = c10::isFloatingType(t) || (integers && c10::isIntegralType(t, /*includeBool=*/false));
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", op, "\" not implemented for '", c10::toString(t), "'");
  TORCH_CHECK(weight.scalar_type() == t, "Input type (", t, ") and weight type (", weight.scalar_type(),
              ") should be the same");
  TORCH_CHECK(!bias || bias->scalar_type() == t, "Input type (", t, ") and bias type (", bias->scalar_type(),
              ") should be the same");
  to_element_type(t, op);
}

std::string key_of(const ops::ConvParams& p) {
  std::string key;
  for (const auto* v : {&p.stride, &p.padding, &p.dilation, &p.output_padding}) {
    for (int64_t x : *v) put(key, x);
  }
  put(key, p.groups);
  key.push_back(p.transposed ? 't' : '-');
  put_float32_precision(key, p.f32_precision);
  return key;
}

// CPU's mkldnn and CUDA's cudnn kernels run channels_last, and lay out
// their results so, when the input or the weight suggests that format.
at::Tensor in_conv_layout(const at::Tensor& t, const at::Tensor& input, const at::Tensor& weight) {
  const at::Tensor& like = input.suggest_memory_format() != c10::MemoryFormat::Contiguous ? input : weight;
  return in_memory_format_of(t, like);
}

at::Tensor convolution_overrideable(const at::Tensor& input, const at::Tensor& weight,
                                    const std::optional<at::Tensor>& bias_opt, c10::SymIntArrayRef stride,
                                    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed,
                                    c10::SymIntArrayRef output_padding, c10::SymInt groups) {
  const at::Tensor* bias = bias_opt && bias_opt->defined() ? &*bias_opt : nullptr;
  const ops::ConvParams p = params(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  check_dtypes(input, weight, bias, "convolution", true);
  const int64_t out_channels = transposed ? weight.size(1) * p.groups : weight.size(0);
  TORCH_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == out_channels), "Given weight of size ", weight.sizes(),
              ", expected bias to be 1-dimensional with ", out_channels, " elements, but got bias of size ",
              bias->sizes(), " instead");
  std::string attributes = key_of(p);
  attributes.push_back(bias ? 'b' : '-');
  OpCall call{"aten::convolution_overrideable", std::move(attributes), {input, weight}, {}};
  if (bias) call.tensors.push_back(*bias);
  const bool has_bias = bias != nullptr;
  at::Tensor out = run_op(call, [p, has_bias](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                              const std::vector<hlo::Value>&) {
                     std::optional<hlo::Value> bias_value;
                     if (has_bias) bias_value = t[2];
                     return std::vector<hlo::Value>{ops::lower_convolution(b, t[0], t[1], bias_value, p)};
                   }).at(0);
  return in_conv_layout(out, input, weight);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> convolution_backward_overrideable(
    const at::Tensor& grad_output, const at::Tensor& input, const at::Tensor& weight, c10::SymIntArrayRef stride,
    c10::SymIntArrayRef padding, c10::SymIntArrayRef dilation, bool transposed, c10::SymIntArrayRef output_padding,
    c10::SymInt groups, std::array<bool, 3> output_mask) {
  const ops::ConvParams p = params(input, weight, stride, padding, dilation, transposed, output_padding, groups);
  check_dtypes(input, weight, nullptr, "convolution_backward", false);
  TORCH_CHECK(grad_output.scalar_type() == input.scalar_type(), "convolution_backward: grad_output of dtype ",
              grad_output.scalar_type(), " does not match input of dtype ", input.scalar_type());
  const int64_t out_channels = transposed ? weight.size(1) * p.groups : weight.size(0);
  TORCH_CHECK(grad_output.dim() == input.dim() && grad_output.size(0) == input.size(0) &&
                  grad_output.size(1) == out_channels,
              "convolution_backward: grad_output of size ", grad_output.sizes(), " does not match input of size ",
              input.sizes(), " and weight of size ", weight.sizes());
  if (!output_mask[0] && !output_mask[1] && !output_mask[2]) return {};
  std::string attributes = key_of(p);
  for (bool m : output_mask) attributes.push_back(m ? '1' : '0');
  OpCall call{"aten::convolution_backward_overrideable", std::move(attributes), {grad_output, input, weight}, {}};
  auto out = run_op(call, [p, output_mask](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                           const std::vector<hlo::Value>&) {
    auto g = ops::lower_convolution_backward(b, t[0], t[1], t[2], p, output_mask);
    std::vector<hlo::Value> results;
    for (const auto* v : {&g.input, &g.weight, &g.bias}) {
      if (*v) results.push_back(**v);
    }
    return results;
  });
  std::array<at::Tensor, 3> grads;
  size_t next = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (output_mask[i]) grads[i] = out.at(next++);
  }
  for (size_t i = 0; i < 2; ++i) {
    if (grads[i].defined()) grads[i] = in_conv_layout(grads[i], input, weight);
  }
  return {grads[0], grads[1], grads[2]};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("convolution_overrideable", convolution_overrideable);
  m.impl("convolution_backward_overrideable", convolution_backward_overrideable);
}

}  // namespace torch_tpu::aten
