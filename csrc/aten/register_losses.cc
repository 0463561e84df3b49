// ATen glue for the losses with their own kernels: binary_cross_entropy,
// binary_cross_entropy_with_logits (composite in ATen, but over
// log_sigmoid; one program here), smooth_l1_loss and huber_loss, forward and backward (functional and
// out= forms). The other losses of torch.nn.functional are composite in
// ATen (cross_entropy with label smoothing or probability targets, l1_loss,
// kl_div, soft_margin_loss, poisson_nll_loss, the margin and embedding losses) and reach these ops,
// nll_loss / mse_loss (register_nn.cc) and pointwise ops.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/result_type.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/nn/losses.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

const at::Tensor* defined(const std::optional<at::Tensor>& t) { return t && t->defined() ? &*t : nullptr; }

ops::LossReduction loss_reduction(int64_t reduction) {
  TORCH_CHECK(reduction >= 0 && reduction <= 2, "reduction must be 0 (none), 1 (mean) or 2 (sum), got ",
              reduction);
  return static_cast<ops::LossReduction>(reduction);
}

void check_float(c10::ScalarType t, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t), "\"", kernel, "\" not implemented for '", c10::toString(t),
                              "'");
}


// ---- binary_cross_entropy ------------------------------------------------

void check_bce(const at::Tensor& self, const at::Tensor& target, const at::Tensor* weight) {
  check_float(self.scalar_type(), "binary_cross_entropy");
  TORCH_CHECK(target.sizes() == self.sizes(), "binary_cross_entropy: target of size ", target.sizes(),
              " does not match the input's ", self.sizes());
  TORCH_CHECK(target.scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(),
              " but found ", target.scalar_type());
  if (weight) {
    TORCH_CHECK(at::is_expandable_to(weight->sizes(), self.sizes()), "binary_cross_entropy: weight of size ",
                weight->sizes(), " does not broadcast to the input's ", self.sizes());
  }
}

// CPU multiplies the loss (or gradient) by the weight in place, so a weight
// of any real dtype applies in the input's.
std::optional<at::Tensor> weight_in(const at::Tensor* weight, c10::ScalarType dtype) {
  if (!weight) return std::nullopt;
  return weight->to(dtype);
}

at::Tensor bce(const at::Tensor& self, const at::Tensor& target,
                                const std::optional<at::Tensor>& weight_opt, int64_t reduction_value) {
  const auto reduction = loss_reduction(reduction_value);
  check_bce(self, target, defined(weight_opt));
  const std::optional<at::Tensor> weight_t = weight_in(defined(weight_opt), self.scalar_type());
  const at::Tensor* weight = defined(weight_t);
  std::string attributes;
  put(attributes, reduction_value);
  attributes.push_back(weight ? 'w' : '-');
  OpCall call{"aten::binary_cross_entropy", std::move(attributes), {self, target}, {}};
  if (weight) call.tensors.push_back(*weight);
  const bool has_weight = weight != nullptr;
  auto out = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[2];
    auto r = ops::lower_binary_cross_entropy(b, t[0], t[1], w, reduction);
    return std::vector<hlo::Value>{r.loss, r.violated, r.target_violated};
  });
  defer_check(out.at(1), CheckError::kRuntime, "all elements of input should be between 0 and 1");
  defer_check(out.at(2), CheckError::kRuntime, "all elements of target should be between 0 and 1");
  // CPU computes into empty_like(input), so an unreduced loss has its layout.
  return out.at(0).sizes() == self.sizes() ? in_layout_of(out.at(0), self) : out.at(0);
}

at::Tensor& bce_out(const at::Tensor& self, const at::Tensor& target,
                                     const std::optional<at::Tensor>& weight, int64_t reduction, at::Tensor& out) {
  write_out(out, bce(self, target, weight, reduction));
  return out;
}

at::Tensor bce_backward(const at::Tensor& grad_output, const at::Tensor& self,
                                         const at::Tensor& target, const std::optional<at::Tensor>& weight_opt,
                                         int64_t reduction_value) {
  const auto reduction = loss_reduction(reduction_value);
  check_bce(self, target, defined(weight_opt));
  const std::optional<at::Tensor> weight_t = weight_in(defined(weight_opt), self.scalar_type());
  const at::Tensor* weight = defined(weight_t);
  // CPU broadcasts grad_output to the input, whatever the reduction (a
  // reduced loss's double backward passes one of the input's shape).
  TORCH_CHECK(grad_output.numel() == 1 || at::infer_size(self.sizes(), grad_output.sizes()) == self.sizes(),
              "binary_cross_entropy_backward: grad_output of size ", grad_output.sizes(),
              " does not broadcast to the input's ", self.sizes());
  std::string attributes;
  put(attributes, reduction_value);
  attributes.push_back(weight ? 'w' : '-');
  OpCall call{"aten::binary_cross_entropy_backward", std::move(attributes), {grad_output, self, target}, {}};
  if (weight) call.tensors.push_back(*weight);
  const bool has_weight = weight != nullptr;
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[3];
    return std::vector<hlo::Value>{ops::lower_binary_cross_entropy_backward(b, t[0], t[1], t[2], w, reduction)};
  }).at(0);
}

at::Tensor& bce_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                              const at::Tensor& target, const std::optional<at::Tensor>& weight,
                                              int64_t reduction, at::Tensor& grad_input) {
  write_out(grad_input, bce_backward(grad_output, self, target, weight, reduction));
  return grad_input;
}

// ---- binary_cross_entropy_with_logits ------------------------------------

at::Tensor bce_with_logits(const at::Tensor& self, const at::Tensor& target,
                                            const std::optional<at::Tensor>& weight_opt,
                                            const std::optional<at::Tensor>& pos_weight_opt,
                                            int64_t reduction_value) {
  const auto reduction = loss_reduction(reduction_value);
  check_float(self.scalar_type(), "binary_cross_entropy_with_logits");
  check_float(target.scalar_type(), "binary_cross_entropy_with_logits");
  for (const at::Tensor* t : {&target, defined(weight_opt), defined(pos_weight_opt)}) {
    if (!t) continue;
    TORCH_CHECK(at::is_expandable_to(t->sizes(), self.sizes()), "binary_cross_entropy_with_logits: a tensor of size ",
                t->sizes(), " does not broadcast to the input's ", self.sizes());
  }
  // CPU's composite, (1 - target).mul_(input).sub_(...), works in place on
  // a tensor of the target's dtype: the loss has that dtype (float32 for
  // bfloat16 logits and float32 targets). It is computed here in the
  // promoted type, the weights of any real dtype in it too.
  const c10::ScalarType compute = c10::promoteTypes(self.scalar_type(), target.scalar_type());
  const std::optional<at::Tensor> weight_t = weight_in(defined(weight_opt), compute);
  const std::optional<at::Tensor> pos_weight_t = weight_in(defined(pos_weight_opt), compute);
  const at::Tensor* weight = defined(weight_t);
  const at::Tensor* pos_weight = defined(pos_weight_t);
  std::string attributes;
  put(attributes, reduction_value);
  attributes.push_back(weight ? 'w' : '-');
  attributes.push_back(pos_weight ? 'p' : '-');
  OpCall call{"aten::binary_cross_entropy_with_logits", std::move(attributes), {self.to(compute), target.to(compute)},
              {}};
  if (weight) call.tensors.push_back(*weight);
  if (pos_weight) call.tensors.push_back(*pos_weight);
  const bool has_weight = weight != nullptr, has_pos_weight = pos_weight != nullptr;
  at::Tensor loss = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                     const std::vector<hlo::Value>&) {
                      std::optional<hlo::Value> w, pw;
                      if (has_weight) w = t[2];
                      if (has_pos_weight) pw = t[has_weight ? 3 : 2];
                      return std::vector<hlo::Value>{
                          ops::lower_binary_cross_entropy_with_logits(b, t[0], t[1], w, pw, reduction)};
                    }).at(0);
  // CPU's composite is elementwise: an unreduced loss takes its operands' layout.
  return in_iterator_layout(loss, call.tensors).to(target.scalar_type());
}

at::Tensor& bce_with_logits_out(const at::Tensor& self, const at::Tensor& target,
                                                 const std::optional<at::Tensor>& weight,
                                                 const std::optional<at::Tensor>& pos_weight, int64_t reduction,
                                                 at::Tensor& out) {
  write_out(out, bce_with_logits(self, target, weight, pos_weight, reduction));
  return out;
}

// ---- smooth_l1_loss and huber_loss ---------------------------------------

struct Piecewise {
  ops::PiecewiseLoss kind;
  const char* name;
  const char* backward_name;
  const char* kernel;  // as CPU names it in dtype errors
};

constexpr Piecewise kSmoothL1{ops::PiecewiseLoss::kSmoothL1, "aten::smooth_l1_loss", "aten::smooth_l1_loss_backward",
                              "smooth_l1_cpu"};
constexpr Piecewise kHuber{ops::PiecewiseLoss::kHuber, "aten::huber_loss", "aten::huber_loss_backward", "huber_cpu"};

void check_param(const Piecewise& p, double param) {
  if (p.kind == ops::PiecewiseLoss::kSmoothL1) {
    TORCH_CHECK(param >= 0, "smooth_l1_loss does not support negative values for beta.");
  } else {
    TORCH_CHECK(param > 0, "huber_loss does not support non-positive values for delta.");
  }
}

at::Tensor piecewise_loss(const Piecewise& p, const at::Tensor& self, const at::Tensor& target,
                          int64_t reduction_value, double param) {
  const auto reduction = loss_reduction(reduction_value);
  check_param(p, param);
  const c10::ScalarType dtype = at::result_type(self, target);
  check_float(dtype, p.kernel);
  at::infer_size(self.sizes(), target.sizes());  // the broadcast error CPU raises
  const ElementType out = to_element_type(dtype, p.name);
  std::string attributes(1, static_cast<char>(out));
  put(attributes, reduction_value);
  OpCall call{p.name, std::move(attributes), {self, target}, {{ops::accumulation_type(out), param}}};
  const auto kind = p.kind;
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_piecewise_loss(b, kind, t[0], t[1], s[0], reduction, out)};
  }).at(0);
}

at::Tensor piecewise_loss_backward(const Piecewise& p, const at::Tensor& grad_output, const at::Tensor& self,
                                   const at::Tensor& target, int64_t reduction_value, double param) {
  const auto reduction = loss_reduction(reduction_value);
  check_param(p, param);
  check_float(self.scalar_type(), p.kernel);
  auto shape = at::infer_size(self.sizes(), target.sizes());
  // CPU broadcasts grad_output too, whatever the reduction (a reduced
  // loss's double backward passes one of the input's shape).
  if (reduction == ops::LossReduction::kNone || grad_output.numel() != 1) {
    shape = at::infer_size(shape, grad_output.sizes());
  }
  const ElementType out = to_element_type(self.scalar_type(), p.backward_name);
  std::string attributes(1, static_cast<char>(out));
  put(attributes, reduction_value);
  OpCall call{p.backward_name, std::move(attributes), {grad_output, self, target},
              {{ops::accumulation_type(out), param}}};
  const auto kind = p.kind;
  const int64_t count = self.numel();  // CPU divides by self's size, whatever the broadcast
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{
        ops::lower_piecewise_loss_backward(b, kind, t[0], t[1], t[2], s[0], reduction, count, out)};
  }).at(0);
}

at::Tensor smooth_l1(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta) {
  // CPU's TensorIterator lays out an unreduced loss as its operands.
  return in_iterator_layout(piecewise_loss(kSmoothL1, self, target, reduction, beta), {self, target});
}

at::Tensor& smooth_l1_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double beta,
                               at::Tensor& out) {
  write_out(out, smooth_l1(self, target, reduction, beta));
  return out;
}

at::Tensor smooth_l1_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                   int64_t reduction, double beta) {
  return piecewise_loss_backward(kSmoothL1, grad_output, self, target, reduction, beta);
}

at::Tensor& smooth_l1_backward_out(const at::Tensor& grad_output, const at::Tensor& self,
                                        const at::Tensor& target, int64_t reduction, double beta,
                                        at::Tensor& grad_input) {
  write_out(grad_input, smooth_l1_backward(grad_output, self, target, reduction, beta));
  return grad_input;
}

at::Tensor huber(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta) {
  // CPU computes into empty_like(input), so an unreduced loss has its layout
  // and dtype (computed in the promoted type, then cast).
  at::Tensor loss = piecewise_loss(kHuber, self, target, reduction, delta).to(self.scalar_type());
  return loss.sizes() == self.sizes() ? in_layout_of(loss, self) : loss;
}

at::Tensor& huber_out(const at::Tensor& self, const at::Tensor& target, int64_t reduction, double delta,
                           at::Tensor& out) {
  write_out(out, huber(self, target, reduction, delta));
  return out;
}

at::Tensor huber_backward(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                               int64_t reduction, double delta) {
  return piecewise_loss_backward(kHuber, grad_output, self, target, reduction, delta);
}

at::Tensor& huber_backward_out(const at::Tensor& grad_output, const at::Tensor& self, const at::Tensor& target,
                                    int64_t reduction, double delta, at::Tensor& grad_input) {
  write_out(grad_input, huber_backward(grad_output, self, target, reduction, delta));
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("binary_cross_entropy", bce);
  m.impl("binary_cross_entropy.out", bce_out);
  m.impl("binary_cross_entropy_backward", bce_backward);
  m.impl("binary_cross_entropy_backward.grad_input", bce_backward_out);
  m.impl("binary_cross_entropy_with_logits", bce_with_logits);
  m.impl("binary_cross_entropy_with_logits.out", bce_with_logits_out);
  m.impl("smooth_l1_loss", smooth_l1);
  m.impl("smooth_l1_loss.out", smooth_l1_out);
  m.impl("smooth_l1_loss_backward", smooth_l1_backward);
  m.impl("smooth_l1_loss_backward.grad_input", smooth_l1_backward_out);
  m.impl("huber_loss", huber);
  m.impl("huber_loss.out", huber_out);
  m.impl("huber_loss_backward", huber_backward);
  m.impl("huber_loss_backward.out", huber_backward_out);
}

}  // namespace torch_tpu::aten
