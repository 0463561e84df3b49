// ATen glue for the normalization layers: batch norm (training with the
// running statistics updated in place, and inference), group norm and RMS
// norm, forward and backward.
//
// F.batch_norm (BatchNorm1d/2d/3d, F.instance_norm) is composite in ATen
// and reaches native_batch_norm / native_batch_norm_backward in eager
// mode; torch.compile's decompositions reach _native_batch_norm_legit* and
// _batch_norm_with_update / batch_norm_backward. F.group_norm reaches
// native_group_norm; F.rms_norm reaches _fused_rms_norm when the weight's
// dtype is the input's (else a composite of pointwise ops and a mean).
#include <ATen/core/Tensor.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <array>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/nn/batch_norm.h"
#include "ops/nn/group_norm.h"
#include "ops/nn/rms_norm.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& key, double v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

const at::Tensor* defined(const std::optional<at::Tensor>& t) { return t && t->defined() ? &*t : nullptr; }
const at::Tensor* defined(const at::Tensor& t) { return t.defined() ? &t : nullptr; }

void check_float(const at::Tensor& t, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t.scalar_type()), "\"", kernel, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "'");
}

bool is_reduced(c10::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

// The statistics' dtype: f32 for a 16-bit input whose parameters are f32
// ("mixed", as CPU allows), else the input's. Every parameter must be of
// that dtype.
c10::ScalarType stat_dtype(const at::Tensor& input, std::initializer_list<const at::Tensor*> params,
                           const char* op) {
  const c10::ScalarType in = input.scalar_type();
  bool mixed = false;
  for (const at::Tensor* p : params) {
    if (p && is_reduced(in) && p->scalar_type() == at::kFloat) mixed = true;
  }
  const c10::ScalarType stat = mixed ? at::kFloat : in;
  for (const at::Tensor* p : params) {
    TORCH_CHECK(!p || p->scalar_type() == stat, op, ": expected the parameters and running statistics to have ",
                mixed ? "dtype float (a mixed-precision input)" : "the input's dtype ", mixed ? "" : c10::toString(in),
                ", but got ", p ? p->scalar_type() : stat);
  }
  return stat;
}

std::optional<hlo::Value> pick(const std::vector<hlo::Value>& t, int index) {
  if (index < 0) return std::nullopt;
  return t[index];
}

// Adds the defined tensors to `call`; returns each one's index (-1: absent).
template <size_t N>
std::array<int, N> add_optional(OpCall& call, std::array<const at::Tensor*, N> tensors, std::string& attributes) {
  std::array<int, N> index{};
  for (size_t i = 0; i < N; ++i) {
    if (tensors[i]) {
      index[i] = static_cast<int>(call.tensors.size());
      call.tensors.push_back(*tensors[i]);
      attributes.push_back('1');
    } else {
      index[i] = -1;
      attributes.push_back('0');
    }
  }
  return index;
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> grads_tuple(const std::vector<at::Tensor>& out,
                                                           std::array<bool, 3> want) {
  std::array<at::Tensor, 3> grads;
  size_t next = 0;
  for (size_t i = 0; i < 3; ++i) {
    if (want[i]) grads[i] = out.at(next++);
  }
  return {grads[0], grads[1], grads[2]};
}

// ---- batch norm ----------------------------------------------------------

void check_features(const char* name, int64_t channels, const at::Tensor* t) {
  TORCH_CHECK(!t || t->numel() == channels, name, " should contain ", channels, " elements not ",
              t ? t->numel() : 0);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_forward(const at::Tensor& input, const at::Tensor* weight,
                                                                  const at::Tensor* bias,
                                                                  const at::Tensor* running_mean,
                                                                  const at::Tensor* running_var, bool training,
                                                                  double momentum, double eps) {
  const char* op = "aten::native_batch_norm";
  const int64_t channels = input.size(1);  // an IndexError for a 1-D input, as on CPU
  check_float(input, "batch_norm");
  check_features("weight", channels, weight);
  check_features("bias", channels, bias);
  check_features("running_mean", channels, running_mean);
  check_features("running_var", channels, running_var);
  const c10::ScalarType param = stat_dtype(input, {weight, bias, running_mean, running_var}, "batch_norm");
  // The saved statistics are in the accumulation type, as PyTorch's shape
  // function gives them for an accelerator (and CUDA's kernel); CPU's are
  // in the parameters' type.
  const ElementType stat_type = ops::accumulation_type(to_element_type(param, op));
  std::string attributes(1, static_cast<char>(stat_type));
  put(attributes, eps);
  OpCall call{op, "", {input}, {}};

  if (!training) {
    TORCH_CHECK(running_mean && running_var,
                "running_mean and running_var must be defined in the evaluation mode");
    attributes.push_back('e');
    auto idx = add_optional<4>(call, {weight, bias, running_mean, running_var}, attributes);
    call.attributes = std::move(attributes);
    auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
      auto r = ops::lower_batch_norm_inference(b, t[0], pick(t, idx[0]), pick(t, idx[1]), t[idx[2]], t[idx[3]], eps);
      return std::vector<hlo::Value>{r.out, r.save_mean, r.save_invstd};
    });
    return {in_layout_of(out.at(0), input), out.at(1), out.at(2)};
  }

  TORCH_CHECK(input.numel() > 0, "input tensor must have at least one element, but got input_sizes = ",
              input.sizes());
  attributes.push_back('t');
  auto idx = add_optional<4>(call, {weight, bias, running_mean, running_var}, attributes);
  const bool updates = running_mean || running_var;
  if (updates) {
    // The running statistics' update runs in their own precision.
    const c10::ScalarType running = (running_mean ? running_mean : running_var)->scalar_type();
    call.scalars.push_back({ops::accumulation_type(to_element_type(running, op)), momentum});
  }
  call.attributes = std::move(attributes);
  const bool has_rm = running_mean != nullptr, has_rv = running_var != nullptr;
  auto body = [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    std::optional<hlo::Value> m;
    if (!s.empty()) m = s[0];
    auto r = ops::lower_batch_norm_training(b, t[0], pick(t, idx[0]), pick(t, idx[1]), pick(t, idx[2]),
                                            pick(t, idx[3]), m, eps, stat_type);
    std::vector<hlo::Value> results;
    if (has_rm) results.push_back(*r.running_mean);
    if (has_rv) results.push_back(*r.running_var);
    results.insert(results.end(), {r.out, r.save_mean, r.save_invstd});
    return results;
  };
  if (!updates) {
    auto out = run_op(call, body);
    return {in_layout_of(out.at(0), input), out.at(1), out.at(2)};
  }
  std::vector<at::Tensor> dsts;
  if (has_rm) dsts.push_back(*running_mean);
  if (has_rv) dsts.push_back(*running_var);
  auto out = run_op_into(call, body, dsts);
  // The result takes the input's layout, as the shape function gives it.
  return {in_layout_of(out.at(0), input), out.at(1), out.at(2)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var, bool training,
    double momentum, double eps) {
  return batch_norm_forward(input, defined(weight), defined(bias), defined(running_mean), defined(running_var),
                            training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, bool training, double momentum, double eps) {
  return batch_norm_forward(input, defined(weight), defined(bias), defined(running_mean), defined(running_var),
                            training, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_batch_norm_legit_no_stats(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    bool training, double momentum, double eps) {
  TORCH_CHECK(training, "_native_batch_norm_legit.no_stats: evaluation mode needs running statistics");
  return batch_norm_forward(input, defined(weight), defined(bias), nullptr, nullptr, true, momentum, eps);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor, at::Tensor> batch_norm_with_update(
    const at::Tensor& input, const std::optional<at::Tensor>& weight, const std::optional<at::Tensor>& bias,
    at::Tensor& running_mean, at::Tensor& running_var, double momentum, double eps) {
  auto [out, mean, invstd] = batch_norm_forward(input, defined(weight), defined(bias), defined(running_mean),
                                                defined(running_var), true, momentum, eps);
  return {out, mean, invstd, at::empty({0}, input.options().dtype(at::kByte))};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_grads(
    const at::Tensor& grad_out, const at::Tensor& input, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& running_mean_opt, const std::optional<at::Tensor>& running_var_opt,
    const std::optional<at::Tensor>& save_mean_opt, const std::optional<at::Tensor>& save_invstd_opt, bool train,
    double eps, std::array<bool, 3> output_mask) {
  const char* op = "aten::native_batch_norm_backward";
  const at::Tensor* weight = defined(weight_opt);
  const at::Tensor* mean = train ? defined(save_mean_opt) : defined(running_mean_opt);
  const at::Tensor* var = train ? defined(save_invstd_opt) : defined(running_var_opt);
  TORCH_CHECK(mean && var, "native_batch_norm_backward: ",
              train ? "save_mean and save_invstd" : "running_mean and running_var", " must be defined");
  check_float(input, "batch_norm_backward");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "native_batch_norm_backward: grad_out of shape ",
              grad_out.sizes(), " does not match the input's ", input.sizes());
  const int64_t channels = input.size(1);
  check_features("weight", channels, weight);
  check_features("mean", channels, mean);
  check_features("var", channels, var);
  if (!output_mask[0] && !output_mask[1] && !output_mask[2]) return {};
  const ElementType weight_type = to_element_type(weight ? weight->scalar_type() : mean->scalar_type(), op);
  std::string attributes(1, static_cast<char>(weight_type));
  put(attributes, eps);
  attributes.push_back(train ? 't' : 'e');
  for (bool w : output_mask) attributes.push_back(w ? '1' : '0');
  OpCall call{op, "", {grad_out, input, *mean, *var}, {}};
  auto idx = add_optional<1>(call, {weight}, attributes);
  call.attributes = std::move(attributes);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto g = ops::lower_batch_norm_backward(b, t[0], t[1], pick(t, idx[0]), t[2], t[3], train, eps, output_mask[0],
                                            output_mask[1], output_mask[2], weight_type, weight_type);
    std::vector<hlo::Value> results;
    for (const auto* v : {&g.input, &g.weight, &g.bias}) {
      if (*v) results.push_back(**v);
    }
    return results;
  });
  return grads_tuple(out, output_mask);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> batch_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& weight,
    const std::optional<at::Tensor>& running_mean, const std::optional<at::Tensor>& running_var,
    const std::optional<at::Tensor>& save_mean, const std::optional<at::Tensor>& save_var, bool update, double eps,
    std::array<bool, 3> output_mask, const at::Tensor& reserve) {
  return batch_norm_grads(grad_out, input, weight, running_mean, running_var, save_mean, save_var, update,
                                    eps, output_mask);
}

// ---- group norm ----------------------------------------------------------

ops::GroupNormShape group_shape(const at::Tensor& input, const at::Tensor* weight, const at::Tensor* bias,
                                c10::SymInt n, c10::SymInt c, c10::SymInt hxw, int64_t group) {
  ops::GroupNormShape s{n.expect_int(), c.expect_int(), hxw.expect_int(), group};
  TORCH_CHECK(s.groups > 0 && s.c % s.groups == 0, "Expected number of channels in input to be divisible by ",
              "num_groups, but got input of shape ", input.sizes(), " and num_groups=", group);
  TORCH_CHECK(input.numel() == s.n * s.c * s.hxw, "native_group_norm: input of shape ", input.sizes(),
              " does not hold N * C * HxW = ", s.n, " * ", s.c, " * ", s.hxw, " elements");
  for (const at::Tensor* p : {weight, bias}) {
    TORCH_CHECK(!p || (p->dim() == 1 && p->numel() == s.c), "Expected ", p == weight ? "weight" : "bias",
                " to be a vector of size equal to the number of channels in input, but got ",
                p == weight ? "weight" : "bias", " of shape ", p ? p->sizes() : c10::IntArrayRef(),
                " and input of shape ", input.sizes());
  }
  return s;
}

void put_shape(std::string& attributes, const ops::GroupNormShape& s) {
  put(attributes, s.n);
  put(attributes, s.c);
  put(attributes, s.hxw);
  put(attributes, s.groups);
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm(const at::Tensor& input,
                                                                 const std::optional<at::Tensor>& weight_opt,
                                                                 const std::optional<at::Tensor>& bias_opt,
                                                                 c10::SymInt n, c10::SymInt c, c10::SymInt hxw,
                                                                 int64_t group, double eps) {
  const char* op = "aten::native_group_norm";
  const at::Tensor* weight = defined(weight_opt);
  const at::Tensor* bias = defined(bias_opt);
  check_float(input, "group_norm");
  const auto shape = group_shape(input, weight, bias, n, c, hxw, group);
  const ElementType stat = to_element_type(stat_dtype(input, {weight, bias}, "group_norm"), op);
  std::string attributes(1, static_cast<char>(stat));
  put_shape(attributes, shape);
  put(attributes, eps);
  OpCall call{op, "", {input}, {}};
  auto idx = add_optional<2>(call, {weight, bias}, attributes);
  call.attributes = std::move(attributes);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto r = ops::lower_group_norm(b, t[0], pick(t, idx[0]), pick(t, idx[1]), shape, eps, stat);
    return std::vector<hlo::Value>{r.out, r.mean, r.rstd};
  });
  // CPU's kernel keeps a channels_last input's format.
  return {in_memory_format_of(out.at(0), input), out.at(1), out.at(2)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_group_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, const at::Tensor& mean, const at::Tensor& rstd,
    const std::optional<at::Tensor>& weight_opt, c10::SymInt n, c10::SymInt c, c10::SymInt hxw, int64_t group,
    std::array<bool, 3> output_mask) {
  const char* op = "aten::native_group_norm_backward";
  const at::Tensor* weight = defined(weight_opt);
  check_float(input, "group_norm_backward");
  const auto shape = group_shape(input, weight, nullptr, n, c, hxw, group);
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "native_group_norm_backward: grad_out of shape ",
              grad_out.sizes(), " does not match the input's ", input.sizes());
  TORCH_CHECK(mean.numel() == shape.n * shape.groups && rstd.numel() == shape.n * shape.groups,
              "native_group_norm_backward: expected mean and rstd of N * group = ", shape.n * shape.groups,
              " elements");
  if (!output_mask[0] && !output_mask[1] && !output_mask[2]) return {};
  const ElementType param_type = to_element_type(weight ? weight->scalar_type() : input.scalar_type(), op);
  std::string attributes(1, static_cast<char>(param_type));
  put_shape(attributes, shape);
  for (bool w : output_mask) attributes.push_back(w ? '1' : '0');
  OpCall call{op, "", {grad_out, input, mean, rstd}, {}};
  auto idx = add_optional<1>(call, {weight}, attributes);
  call.attributes = std::move(attributes);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto g = ops::lower_group_norm_backward(b, t[0], t[1], t[2], t[3], pick(t, idx[0]), shape, output_mask[0],
                                            output_mask[1], output_mask[2], param_type, param_type);
    std::vector<hlo::Value> results;
    for (const auto* v : {&g.input, &g.weight, &g.bias}) {
      if (*v) results.push_back(**v);
    }
    return results;
  });
  auto grads = grads_tuple(out, output_mask);
  if (output_mask[0]) std::get<0>(grads) = in_memory_format_of(std::get<0>(grads), input);
  return grads;
}

// ---- RMS norm ------------------------------------------------------------

double rms_eps(const at::Tensor& input, std::optional<double> eps) {
  if (eps) return *eps;
  // As CPU: the epsilon of the computation type (f32 for 16-bit floats).
  return input.scalar_type() == at::kDouble ? std::numeric_limits<double>::epsilon()
                                            : static_cast<double>(std::numeric_limits<float>::epsilon());
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm(const at::Tensor& input, at::IntArrayRef normalized_shape,
                                                  const std::optional<at::Tensor>& weight_opt,
                                                  std::optional<double> eps_opt) {
  const char* op = "aten::_fused_rms_norm";
  const at::Tensor* weight = defined(weight_opt);
  at::native::_check_rms_norm_inputs_symint(input, c10::fromIntArrayRefSlow(normalized_shape),
                                            weight ? *weight : at::Tensor());
  check_float(input, "rms_norm");
  TORCH_CHECK(!weight || weight->scalar_type() == input.scalar_type(), "_fused_rms_norm: expected weight of dtype ",
              input.scalar_type(), " (the input's), but got ", weight ? weight->scalar_type() : input.scalar_type());
  const double eps = rms_eps(input, eps_opt);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  std::string attributes;
  put(attributes, axis);
  put(attributes, eps);
  OpCall call{op, "", {input}, {}};
  auto idx = add_optional<1>(call, {weight}, attributes);
  call.attributes = std::move(attributes);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto r = ops::lower_rms_norm(b, t[0], pick(t, idx[0]), axis, eps);
    return std::vector<hlo::Value>{r.out, r.rstd};
  });
  return {out.at(0), out.at(1)};
}

std::tuple<at::Tensor, at::Tensor> fused_rms_norm_backward(const at::Tensor& grad_out, const at::Tensor& input,
                                                           at::IntArrayRef normalized_shape, const at::Tensor& rstd,
                                                           const std::optional<at::Tensor>& weight_opt,
                                                           std::array<bool, 2> output_mask) {
  const char* op = "aten::_fused_rms_norm_backward";
  const at::Tensor* weight = defined(weight_opt);
  at::native::_check_rms_norm_inputs_symint(input, c10::fromIntArrayRefSlow(normalized_shape),
                                            weight ? *weight : at::Tensor());
  check_float(input, "rms_norm_backward");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "_fused_rms_norm_backward: grad_out of shape ", grad_out.sizes(),
              " does not match the input's ", input.sizes());
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= input.size(d);
  TORCH_CHECK(rstd.numel() == rows, "_fused_rms_norm_backward: expected rstd with ", rows, " elements, got ",
              rstd.sizes());
  const bool want_input = output_mask[0], want_weight = output_mask[1] && weight;
  if (!want_input && !want_weight) return {};
  const ElementType weight_type = to_element_type(weight ? weight->scalar_type() : input.scalar_type(), op);
  std::string attributes(1, static_cast<char>(weight_type));
  put(attributes, axis);
  attributes.push_back(want_input ? '1' : '0');
  attributes.push_back(want_weight ? '1' : '0');
  OpCall call{op, "", {grad_out, input, rstd}, {}};
  auto idx = add_optional<1>(call, {weight}, attributes);
  call.attributes = std::move(attributes);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto g = ops::lower_rms_norm_backward(b, t[0], t[1], t[2], pick(t, idx[0]), axis, want_input, want_weight,
                                          weight_type);
    std::vector<hlo::Value> results;
    if (g.input) results.push_back(*g.input);
    if (g.weight) results.push_back(*g.weight);
    return results;
  });
  at::Tensor dx = want_input ? out.at(0) : at::Tensor();
  at::Tensor dw = want_weight ? out.at(want_input ? 1 : 0) : at::Tensor();
  return {dx, dw};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("native_batch_norm", native_batch_norm);
  m.impl("native_batch_norm_backward", batch_norm_grads);
  m.impl("_native_batch_norm_legit", native_batch_norm_legit);
  m.impl("_native_batch_norm_legit.no_stats", native_batch_norm_legit_no_stats);
  m.impl("_batch_norm_with_update", batch_norm_with_update);
  m.impl("batch_norm_backward", batch_norm_backward);
  m.impl("native_group_norm", native_group_norm);
  m.impl("native_group_norm_backward", native_group_norm_backward);
  m.impl("_fused_rms_norm", fused_rms_norm);
  m.impl("_fused_rms_norm_backward", fused_rms_norm_backward);
}

}  // namespace torch_tpu::aten
