// ATen glue for the neural-network ops with their own lowerings: embedding,
// layer norm and the losses (nll_loss, nll_loss2d, mse_loss), forward and
// backward. F.linear, F.cross_entropy, F.layer_norm, torch.stack ... are
// composite in ATen and reach these (and the ops of register_linalg.cc).
// Checks raise what CPU raises; the data-dependent ones (an index or target
// out of range) are deferred to the next sync (aten/deferred_checks.h).
#include <ATen/ExpandUtils.h>
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/layer_norm.h>
#include <ATen/ops/result_type.h>
#include <c10/core/ScalarType.h>
#include <c10/util/irange.h>
#include <torch/library.h>

#include <array>
#include <cstring>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/index_checks.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/nn/embedding.h"
#include "ops/nn/layer_norm.h"
#include "ops/nn/loss.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& key, double v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

const at::Tensor* defined(const std::optional<at::Tensor>& t) { return t && t->defined() ? &*t : nullptr; }

bool is_float(c10::ScalarType t) { return c10::isFloatingType(t); }

void check_float(const at::Tensor& t, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(is_float(t.scalar_type()), "\"", kernel, "\" not implemented for '",
                              c10::toString(t.scalar_type()), "'");
}

// ---- embedding -----------------------------------------------------------

void check_indices(const at::Tensor& indices, int position, const char* op) {
  at::checkScalarTypes(op, {indices, "indices", position}, {at::kLong, at::kInt});
}

at::Tensor embedding(const at::Tensor& weight, const at::Tensor& indices, c10::SymInt padding_idx,
                     bool scale_grad_by_freq, bool sparse) {
  TORCH_CHECK(weight.dim() == 2, "'weight' must be 2-D");
  check_indices(indices, 1, "embedding");
  // An index outside [0, rows) raises IndexError at the next sync (index_checks.h).
  OpCall call{"aten::embedding", "", {weight, indices}, {}};
  return run_checked(call, [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return ops::Checked{ops::lower_embedding(b, t[0], t[1]), ops::index_out_of_range(b, t[1], t[0].dims()[0], false)};
  }, CheckError::kIndex, "index out of range in self");
}

at::Tensor embedding_dense_backward(const at::Tensor& grad_output, const at::Tensor& indices,
                                    c10::SymInt num_weights_sym, c10::SymInt padding_idx_sym,
                                    bool scale_grad_by_freq) {
  check_indices(indices, 2, "embedding_backward");
  const int64_t num_weights = num_weights_sym.expect_int();
  const int64_t padding_idx = padding_idx_sym.expect_int();
  TORCH_CHECK(grad_output.dim() == indices.dim() + 1 &&
                  grad_output.sizes().slice(0, indices.dim()).equals(indices.sizes()),
              "embedding_backward: grad_output of shape ", grad_output.sizes(),
              " does not match indices of shape ", indices.sizes());
  TORCH_CHECK(num_weights >= 0, "embedding_backward: num_weights must be non-negative, got ", num_weights);
  std::string attributes;
  put(attributes, num_weights);
  put(attributes, padding_idx);
  attributes.push_back(scale_grad_by_freq ? 'f' : '-');
  OpCall call{"aten::embedding_dense_backward", std::move(attributes), {grad_output, indices}, {}};
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{
        ops::lower_embedding_backward(b, t[0], t[1], num_weights, padding_idx, scale_grad_by_freq)};
  }).at(0);
}

// F.embedding(max_norm=...) renormalizes the looked-up rows of the weight in
// place before the lookup.
at::Tensor& embedding_renorm_(at::Tensor& self, const at::Tensor& indices, double max_norm, double norm_type) {
  TORCH_CHECK(self.dim() == 2, "embedding_renorm_: expected 2-D weight, but got ", self.dim(), "-D");
  check_indices(indices, 2, "embedding_renorm_");
  check_float(self, "embedding_renorm_cpu_");
  std::string attributes;
  put(attributes, max_norm);
  put(attributes, norm_type);
  OpCall call{"aten::embedding_renorm_", std::move(attributes), {self, indices}, {}};
  run_checked_into(
      call,
      [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
        return ops::Checked{ops::lower_embedding_renorm(b, t[0], t[1], max_norm, norm_type),
                            ops::index_out_of_range(b, t[1], t[0].dims()[0], false)};
      },
      self, CheckError::kIndex, "embedding_renorm_: index out of range in self");
  return self;
}

// ---- layer norm ----------------------------------------------------------

// mean / rstd are in the input's accumulation type (f32 for a 16-bit
// input), as PyTorch's shape function gives them for an accelerator (and
// CUDA's kernel; CPU's are f32 only with f32 parameters). The parameters
// must be of the input's type, or f32 for a 16-bit input ("mixed").
ElementType layer_norm_stat_type(const at::Tensor& input, const at::Tensor* weight, const at::Tensor* bias) {
  check_float(input, "LayerNormKernelImpl");
  const c10::ScalarType in = input.scalar_type();
  const bool reduced = in == at::kBFloat16 || in == at::kHalf;
  for (const at::Tensor* p : {weight, bias}) {
    if (!p || (reduced && p->scalar_type() == at::kFloat)) continue;
    TORCH_CHECK(p->scalar_type() == in, "layer_norm: expected weight and bias of dtype ", in,
                reduced ? " or Float" : "", " (the input's), but got ", p->scalar_type());
  }
  TORCH_CHECK(!(weight && bias) || weight->scalar_type() == bias->scalar_type(),
              "layer_norm: expected weight and bias to have the same dtype, but got ", weight->scalar_type(),
              " and ", bias->scalar_type());
  return ops::accumulation_type(to_element_type(in, "aten::native_layer_norm"));
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm(const at::Tensor& input,
                                                                 c10::SymIntArrayRef normalized_shape_sym,
                                                                 const std::optional<at::Tensor>& weight_opt,
                                                                 const std::optional<at::Tensor>& bias_opt,
                                                                 double eps) {
  const auto normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const at::Tensor* weight = defined(weight_opt);
  const at::Tensor* bias = defined(bias_opt);
  at::native::_check_layer_norm_inputs(input, normalized_shape, weight ? *weight : at::Tensor(),
                                       bias ? *bias : at::Tensor());
  const ElementType stat = layer_norm_stat_type(input, weight, bias);
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  std::string attributes(1, static_cast<char>(stat));
  put(attributes, axis);
  put(attributes, eps);
  attributes.push_back(weight ? 'w' : '-');
  attributes.push_back(bias ? 'b' : '-');
  OpCall call{"aten::native_layer_norm", std::move(attributes), {input}, {}};
  if (weight) call.tensors.push_back(*weight);
  if (bias) call.tensors.push_back(*bias);
  const bool has_weight = weight != nullptr, has_bias = bias != nullptr;
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> w, bi;
    if (has_weight) w = t[1];
    if (has_bias) bi = t[has_weight ? 2 : 1];
    auto r = ops::lower_layer_norm(b, t[0], w, bi, axis, eps, stat);
    return std::vector<hlo::Value>{r.out, r.mean, r.rstd};
  });
  return {out.at(0), out.at(1), out.at(2)};
}

std::tuple<at::Tensor, at::Tensor, at::Tensor> native_layer_norm_backward(
    const at::Tensor& grad_out, const at::Tensor& input, c10::SymIntArrayRef normalized_shape_sym,
    const at::Tensor& mean, const at::Tensor& rstd, const std::optional<at::Tensor>& weight_opt,
    const std::optional<at::Tensor>& bias_opt, std::array<bool, 3> output_mask) {
  const auto normalized_shape = C10_AS_INTARRAYREF_SLOW(normalized_shape_sym);
  const at::Tensor* weight = defined(weight_opt);
  const at::Tensor* bias = defined(bias_opt);
  at::native::_check_layer_norm_inputs(input, normalized_shape, weight ? *weight : at::Tensor(),
                                       bias ? *bias : at::Tensor());
  check_float(input, "LayerNormBackwardKernelImpl");
  TORCH_CHECK(grad_out.sizes() == input.sizes(), "native_layer_norm_backward: grad_out of shape ",
              grad_out.sizes(), " does not match input of shape ", input.sizes());
  const int64_t axis = input.dim() - static_cast<int64_t>(normalized_shape.size());
  int64_t rows = 1;
  for (int64_t d = 0; d < axis; ++d) rows *= input.size(d);
  TORCH_CHECK(mean.numel() == rows && rstd.numel() == rows, "native_layer_norm_backward: expected mean and rstd ",
              "with ", rows, " elements, got ", mean.numel(), " and ", rstd.numel());
  const bool want_input = output_mask[0];
  const bool want_weight = output_mask[1] && weight;
  const bool want_bias = output_mask[2] && bias;
  if (!want_input && !want_weight && !want_bias) return {};
  const at::Tensor& param = weight ? *weight : bias ? *bias : input;
  const ElementType weight_type = to_element_type(param.scalar_type(), "aten::native_layer_norm_backward");
  const ElementType bias_type =
      to_element_type((bias ? *bias : param).scalar_type(), "aten::native_layer_norm_backward");
  std::string attributes;
  put(attributes, axis);
  attributes.push_back(weight ? 'w' : '-');
  attributes.push_back(want_input ? 'i' : '-');
  attributes.push_back(want_weight ? 'w' : '-');
  attributes.push_back(want_bias ? 'b' : '-');
  attributes.push_back(static_cast<char>(weight_type));
  attributes.push_back(static_cast<char>(bias_type));
  OpCall call{"aten::native_layer_norm_backward", std::move(attributes), {grad_out, input, mean, rstd}, {}};
  const bool has_weight = weight != nullptr;
  if (has_weight) call.tensors.push_back(*weight);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[4];
    auto g = ops::lower_layer_norm_backward(b, t[0], t[1], t[2], t[3], w, axis, want_input, want_weight,
                                            want_bias, weight_type, bias_type);
    std::vector<hlo::Value> results;
    for (const auto* v : {&g.input, &g.weight, &g.bias}) {
      if (*v) results.push_back(**v);
    }
    return results;
  });
  std::array<at::Tensor, 3> grads;
  size_t next = 0;
  if (want_input) grads[0] = out.at(next++);
  if (want_weight) grads[1] = out.at(next++);
  if (want_bias) grads[2] = out.at(next++);
  return {grads[0], grads[1], grads[2]};
}

// ---- nll_loss ------------------------------------------------------------

ops::LossReduction loss_reduction(int64_t reduction) {
  TORCH_CHECK(reduction >= 0 && reduction <= 2, "reduction must be 0 (none), 1 (mean) or 2 (sum), got ",
              reduction);
  return static_cast<ops::LossReduction>(reduction);
}

void check_nll_common(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight,
                      int64_t class_dim) {
  TORCH_CHECK(target.scalar_type() == at::kLong || target.scalar_type() == at::kByte,
              "expected target dtype to be Long or Byte, but got ", target.scalar_type());
  check_float(self, "nll_loss_out_frame");
  const int64_t classes = self.size(class_dim);
  TORCH_CHECK(!weight || (weight->dim() == 1 && weight->numel() == classes),
              "weight tensor should be defined either for all ", classes,
              " classes or no classes but got weight tensor of shape: ", weight ? weight->sizes() : c10::IntArrayRef());
  TORCH_CHECK(!weight || weight->scalar_type() == self.scalar_type(), "expected scalar type ",
              self.scalar_type(), " but found ", weight ? weight->scalar_type() : self.scalar_type());
}

void check_nll_1d_2d(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight) {
  TORCH_CHECK(self.dim() > 0 && self.dim() <= 2, "input tensor should be 1D or 2D");
  TORCH_CHECK(target.dim() <= 1, "0D or 1D target tensor expected, multi-target not supported");
  const bool no_batch_dim = self.dim() == 1 && target.dim() == 0;
  TORCH_CHECK(no_batch_dim || self.size(0) == target.size(0), "size mismatch (got input: ", self.sizes(),
              ", target: ", target.sizes(), ")");
  TORCH_CHECK(self.dim() == 2 || target.dim() == 0,
              "nll_loss on tpu: a 1-D input needs a 0-dim target, got target of shape ", target.sizes());
  check_nll_common(self, target, weight, self.dim() == 1 ? 0 : 1);
}

void check_nll_2d(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight) {
  TORCH_CHECK(self.dim() == 4, "only batches of spatial inputs supported (4D tensors), but got input of size: ",
              self.sizes());
  TORCH_CHECK(target.dim() == 3, "only batches of spatial targets supported (3D tensors) but got targets of size: ",
              target.sizes());
  TORCH_CHECK(self.size(0) == target.size(0) && self.size(2) == target.size(1) && self.size(3) == target.size(2),
              "input and target batch or spatial sizes don't match: target ", target.sizes(), ", input ",
              self.sizes());
  check_nll_common(self, target, weight, 1);
}

OpCall nll_call(const char* name, int64_t reduction, int64_t ignore_index, bool has_weight) {
  std::string attributes;
  put(attributes, reduction);
  put(attributes, ignore_index);
  attributes.push_back(has_weight ? 'w' : '-');
  return OpCall{name, std::move(attributes), {}, {}};
}

std::tuple<at::Tensor, at::Tensor> nll_forward(const char* name, const at::Tensor& self, const at::Tensor& target,
                                               const at::Tensor* weight, int64_t reduction_value,
                                               int64_t ignore_index) {
  const auto reduction = loss_reduction(reduction_value);
  OpCall call = nll_call(name, reduction_value, ignore_index, weight != nullptr);
  call.tensors = {self, target};
  const bool has_weight = weight != nullptr;
  if (has_weight) call.tensors.push_back(*weight);
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[2];
    auto r = ops::lower_nll_loss(b, t[0], t[1], w, reduction, ignore_index);
    return std::vector<hlo::Value>{r.output, r.total_weight};
  });
  return {out.at(0), out.at(1)};
}

at::Tensor nll_backward(const char* name, const at::Tensor& grad_output, const at::Tensor& self,
                        const at::Tensor& target, const at::Tensor* weight, int64_t reduction_value,
                        int64_t ignore_index, const at::Tensor& total_weight) {
  const auto reduction = loss_reduction(reduction_value);
  TORCH_CHECK(total_weight.numel() == 1, "expected total_weight to be a single element tensor, got: ",
              total_weight.sizes(), " (", total_weight.numel(), " elements)");
  if (reduction == ops::LossReduction::kNone && self.dim() >= 2) {
    TORCH_CHECK(grad_output.sizes() == target.sizes(), "Expected grad_output of shape ", target.sizes(),
                " but got ", grad_output.sizes());
  } else {
    TORCH_CHECK(grad_output.numel() == 1, "Expected a single element grad_output tensor, but got: ",
                grad_output.sizes());
  }
  OpCall call = nll_call(name, reduction_value, ignore_index, weight != nullptr);
  call.tensors = {grad_output, self, target, total_weight};
  const bool has_weight = weight != nullptr;
  if (has_weight) call.tensors.push_back(*weight);
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[4];
    return std::vector<hlo::Value>{
        ops::lower_nll_loss_backward(b, t[0], t[1], t[2], w, reduction, ignore_index, t[3])};
  }).at(0);
}

void copy_result(at::Tensor& out, const at::Tensor& value) {
  at::native::resize_output(out, value.sizes());
  out.copy_(value);
}

std::tuple<at::Tensor, at::Tensor> nll_loss_forward(const at::Tensor& self, const at::Tensor& target,
                                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                                    c10::SymInt ignore_index) {
  if (self.dim() == 1 && target.dim() == 1) {
    // CPU's forward takes one class index for an unbatched input either
    // way (its backward then refuses the 1-element target, as here).
    TORCH_CHECK_VALUE(target.size(0) == 1, "For 1D input, 1D target must have size 1, but got target size: ",
                      target.size(0));
    return nll_loss_forward(self, target.reshape({}), weight, reduction, std::move(ignore_index));
  }
  check_nll_1d_2d(self, target, defined(weight));
  defer_target_check(target, self.size(self.dim() == 1 ? 0 : 1), ignore_index.expect_int());
  return nll_forward("aten::nll_loss_forward", self, target, defined(weight), reduction, ignore_index.expect_int());
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                          const std::optional<at::Tensor>& weight,
                                                          int64_t reduction, c10::SymInt ignore_index,
                                                          at::Tensor& output, at::Tensor& total_weight) {
  auto [o, w] = nll_loss_forward(self, target, weight, reduction, ignore_index);
  copy_result(output, o);
  copy_result(total_weight, w);
  return {output, total_weight};
}

at::Tensor nll_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             const std::optional<at::Tensor>& weight, int64_t reduction, c10::SymInt ignore_index,
                             const at::Tensor& total_weight) {
  check_nll_1d_2d(self, target, defined(weight));
  return nll_backward("aten::nll_loss_backward", grad_output, self, target, defined(weight), reduction,
                      ignore_index.expect_int(), total_weight);
}

at::Tensor& nll_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  const std::optional<at::Tensor>& weight, int64_t reduction,
                                  c10::SymInt ignore_index, const at::Tensor& total_weight, at::Tensor& grad_input) {
  copy_result(grad_input, nll_loss_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight));
  return grad_input;
}

std::tuple<at::Tensor, at::Tensor> nll_loss2d_forward(const at::Tensor& self, const at::Tensor& target,
                                                      const std::optional<at::Tensor>& weight, int64_t reduction,
                                                      c10::SymInt ignore_index) {
  check_nll_2d(self, target, defined(weight));
  defer_target_check(target, self.size(1), ignore_index.expect_int());
  return nll_forward("aten::nll_loss2d_forward", self, target, defined(weight), reduction,
                     ignore_index.expect_int());
}

std::tuple<at::Tensor&, at::Tensor&> nll_loss2d_forward_out(const at::Tensor& self, const at::Tensor& target,
                                                            const std::optional<at::Tensor>& weight,
                                                            int64_t reduction, c10::SymInt ignore_index,
                                                            at::Tensor& output, at::Tensor& total_weight) {
  auto [o, w] = nll_loss2d_forward(self, target, weight, reduction, ignore_index);
  copy_result(output, o);
  copy_result(total_weight, w);
  return {output, total_weight};
}

at::Tensor nll_loss2d_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               const std::optional<at::Tensor>& weight, int64_t reduction,
                               c10::SymInt ignore_index, const at::Tensor& total_weight) {
  check_nll_2d(self, target, defined(weight));
  return nll_backward("aten::nll_loss2d_backward", grad_output, self, target, defined(weight), reduction,
                      ignore_index.expect_int(), total_weight);
}

at::Tensor& nll_loss2d_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    const std::optional<at::Tensor>& weight, int64_t reduction,
                                    c10::SymInt ignore_index, const at::Tensor& total_weight,
                                    at::Tensor& grad_input) {
  copy_result(grad_input,
              nll_loss2d_backward(grad_output, self, target, weight, reduction, ignore_index, total_weight));
  return grad_input;
}

// ---- mse_loss ------------------------------------------------------------

struct MsePlan {
  OpCall call;
  std::vector<int64_t> shape;
  c10::ScalarType dtype;
};

MsePlan mse_plan(const at::Tensor& self, const at::Tensor& target, int64_t reduction_value) {
  const auto reduction = loss_reduction(reduction_value);
  const c10::ScalarType dtype = at::result_type(self, target);
  TORCH_CHECK_NOT_IMPLEMENTED(is_float(dtype), "\"mse_cpu\" not implemented for '", c10::toString(dtype), "'");
  auto shape = at::infer_size(self.sizes(), target.sizes());
  std::string attributes(1, static_cast<char>(to_element_type(dtype, "aten::mse_loss")));
  put(attributes, reduction_value);
  MsePlan plan{OpCall{"aten::mse_loss", std::move(attributes), {self, target}, {}},
               reduction == ops::LossReduction::kNone ? shape : std::vector<int64_t>{}, dtype};
  return plan;
}

LoweringBody mse_body(int64_t reduction_value, c10::ScalarType dtype) {
  const auto reduction = static_cast<ops::LossReduction>(reduction_value);
  const ElementType out = to_element_type(dtype, "aten::mse_loss");
  return [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_mse_loss(b, t[0], t[1], reduction, out)};
  };
}

at::Tensor mse_loss(const at::Tensor& self, const at::Tensor& target, int64_t reduction) {
  MsePlan plan = mse_plan(self, target, reduction);
  // CPU's TensorIterator lays out an unreduced loss as its operands.
  return in_iterator_layout(run_op(plan.call, mse_body(reduction, plan.dtype)).at(0), plan.call.tensors);
}

at::Tensor& mse_loss_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, at::Tensor& out) {
  MsePlan plan = mse_plan(self, target, reduction);
  TORCH_CHECK(c10::canCast(plan.dtype, out.scalar_type()), "result type ", plan.dtype,
              " can't be cast to the desired output type ", out.scalar_type());
  prepare_out(out, plan.shape, false, plan.call.tensors);
  run_op_into(plan.call, mse_body(reduction, plan.dtype), out);
  return out;
}

struct MseBackwardPlan {
  OpCall call;
  LoweringBody body;
  std::vector<int64_t> shape;
};

MseBackwardPlan mse_backward_plan(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  int64_t reduction_value) {
  const auto reduction = loss_reduction(reduction_value);
  check_float(self, "mse_backward_cpu_out");
  auto shape = at::infer_size(at::infer_size(self.sizes(), target.sizes()), grad_output.sizes());
  const ElementType out = to_element_type(self.scalar_type(), "aten::mse_loss_backward");
  const int64_t count = self.numel();  // CPU divides by self's size, whatever the broadcast
  std::string attributes(1, static_cast<char>(out));
  put(attributes, reduction_value);
  return {OpCall{"aten::mse_loss_backward", std::move(attributes), {grad_output, self, target}, {}},
          [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
            return std::vector<hlo::Value>{ops::lower_mse_loss_backward(b, t[0], t[1], t[2], reduction, count, out)};
          },
          std::vector<int64_t>(shape.begin(), shape.end())};
}

at::Tensor mse_loss_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                             int64_t reduction) {
  MseBackwardPlan plan = mse_backward_plan(grad_output, self, target, reduction);
  return run_op(plan.call, plan.body).at(0);
}

at::Tensor& mse_loss_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                  int64_t reduction, at::Tensor& grad_input) {
  MseBackwardPlan plan = mse_backward_plan(grad_output, self, target, reduction);
  at::native::resize_output(grad_input, plan.shape);
  run_op_into(plan.call, plan.body, grad_input);
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("embedding", embedding);
  m.impl("embedding_dense_backward", embedding_dense_backward);
  m.impl("embedding_renorm_", embedding_renorm_);
  m.impl("native_layer_norm", native_layer_norm);
  m.impl("native_layer_norm_backward", native_layer_norm_backward);
  m.impl("nll_loss_forward", nll_loss_forward);
  m.impl("nll_loss_forward.output", nll_loss_forward_out);
  m.impl("nll_loss_backward", nll_loss_backward);
  m.impl("nll_loss_backward.grad_input", nll_loss_backward_out);
  m.impl("nll_loss2d_forward", nll_loss2d_forward);
  m.impl("nll_loss2d_forward.output", nll_loss2d_forward_out);
  m.impl("nll_loss2d_backward", nll_loss2d_backward);
  m.impl("nll_loss2d_backward.grad_input", nll_loss2d_backward_out);
  m.impl("mse_loss", mse_loss);
  m.impl("mse_loss.out", mse_loss_out);
  m.impl("mse_loss_backward", mse_loss_backward);
  m.impl("mse_loss_backward.grad_input", mse_loss_backward_out);
}

}  // namespace torch_tpu::aten
