// ATen glue for multi_margin_loss and multilabel_margin_loss (forward,
// backward, out= forms), with CPU's checks; a target class outside the
// input's classes raises at the next sync (the check needs device values).
// Lowerings: csrc/ops/nn/margin_losses.cc.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "ops/nn/margin_losses.h"

namespace torch_tpu::aten {

namespace {

using at::Tensor;
using Values = std::vector<hlo::Value>;

ops::LossReduction loss_reduction(int64_t reduction) {
  TORCH_CHECK(reduction >= 0 && reduction <= 2, "reduction must be 0 (none), 1 (mean) or 2 (sum), got ", reduction);
  return static_cast<ops::LossReduction>(reduction);
}


// self as [N, C] (a 0-dim input is one sample of one class).
Tensor as_matrix(const Tensor& self) {
  if (self.dim() == 0) return self.reshape({1, 1});
  return self.dim() == 1 ? self.unsqueeze(0) : self;
}

void check_input(const Tensor& self, const char* kernel) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"", kernel, "\" not implemented for '",
                              c10::toString(self.scalar_type()), "'");
  TORCH_CHECK(self.dim() == 0 || (self.dim() == 1 && self.size(0) != 0) || (self.dim() == 2 && self.size(1) != 0),
              "Expected non-empty vector or matrix with optional 0-dim batch size, but got: ", self.sizes());
  to_element_type(self.scalar_type(), kernel);
}

void check_long(const Tensor& target) {
  TORCH_CHECK(target.scalar_type() == at::kLong, "expected scalar type Long but found ", target.scalar_type());
}

// ---- multi_margin_loss ------------------------------------------------------------------

struct MultiMarginArgs {
  int64_t p;
  double margin;
  const Tensor* weight;
};

MultiMarginArgs check_multi_margin(const Tensor& self, const Tensor& target, const c10::Scalar& p,
                                   const c10::Scalar& margin, const std::optional<Tensor>& weight) {
  check_input(self, "multi_margin_loss");
  const int64_t n = self.dim() == 2 ? self.size(0) : 1, c = self.dim() == 0 ? 1 : self.size(-1);
  TORCH_CHECK(target.dim() <= 1 && target.numel() == n,
              "multi_margin_loss: target tensor should be 1-D with size equal to the number of input samples ",
              "(batch size). Expected target size [", n, "], but got ", target.sizes(), ". Input size is ",
              self.sizes());
  TORCH_CHECK(p.toLong() == 1 || p.toLong() == 2, "only p == 1 and p == 2 supported");
  const Tensor* w = weight && weight->defined() ? &*weight : nullptr;
  if (w) {
    TORCH_CHECK(w->numel() == c, "inconsistent weight size, expected ", c, " but got ", w->sizes());
    TORCH_CHECK(w->scalar_type() == self.scalar_type(), "expected scalar type ", self.scalar_type(), " but found ",
                w->scalar_type());
  }
  check_long(target);  // after the shapes, as CPU's kernel reads it
  return {p.toLong(), margin.toDouble(), w};
}

// The margin is a constant of the program: its exact bits go in the key.
std::string multi_margin_key(const MultiMarginArgs& a, int64_t reduction) {
  std::ostringstream key;
  key << a.p << ':' << std::hexfloat << a.margin << ':' << reduction << (a.weight ? 'w' : '-');
  return key.str();
}

Tensor tpu_multi_margin_loss(const Tensor& self, const Tensor& target, const c10::Scalar& p, const c10::Scalar& margin,
                         const std::optional<Tensor>& weight, int64_t reduction) {
  MultiMarginArgs a = check_multi_margin(self, target, p, margin, weight);
  const ops::LossReduction r = loss_reduction(reduction);
  const int64_t n = as_matrix(self).size(0);
  OpCall call{"aten::multi_margin_loss", multi_margin_key(a, reduction), {as_matrix(self), target.reshape({n})}, {}};
  if (a.weight) call.tensors.push_back(a.weight->reshape({-1}));
  const bool has_weight = a.weight != nullptr;
  auto out = run_op(call, [=](hlo::Builder& b, const Values& t, const Values&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[2];
    ops::MarginLoss l = ops::lower_multi_margin_loss(b, t[0], t[1], a.p, a.margin, w, r);
    return Values{l.loss, l.violated};
  });
  defer_check(out.at(1), CheckError::kRuntime, "multi_margin_loss: target out of range");
  return r == ops::LossReduction::kNone ? out[0].reshape(target.sizes()) : out[0];
}

Tensor& tpu_multi_margin_loss_out(const Tensor& self, const Tensor& target, const c10::Scalar& p,
                              const c10::Scalar& margin, const std::optional<Tensor>& weight, int64_t reduction,
                              Tensor& out) {
  write_out(out, tpu_multi_margin_loss(self, target, p, margin, weight, reduction));
  return out;
}

Tensor tpu_multi_margin_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                  const c10::Scalar& p, const c10::Scalar& margin,
                                  const std::optional<Tensor>& weight, int64_t reduction) {
  MultiMarginArgs a = check_multi_margin(self, target, p, margin, weight);
  const ops::LossReduction r = loss_reduction(reduction);
  const int64_t n = as_matrix(self).size(0);
  Tensor grad = r == ops::LossReduction::kNone ? grad_output.reshape({n}) : grad_output.reshape({});
  OpCall call{"aten::multi_margin_loss_backward", multi_margin_key(a, reduction),
              {grad, as_matrix(self), target.reshape({n})}, {}};
  if (a.weight) call.tensors.push_back(a.weight->reshape({-1}));
  const bool has_weight = a.weight != nullptr;
  auto out = run_op(call, [=](hlo::Builder& b, const Values& t, const Values&) {
    std::optional<hlo::Value> w;
    if (has_weight) w = t[3];
    return Values{ops::lower_multi_margin_loss_backward(b, t[0], t[1], t[2], a.p, a.margin, w, r)};
  });
  return out.at(0).reshape(self.sizes());
}

Tensor& tpu_multi_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                       const c10::Scalar& p, const c10::Scalar& margin,
                                       const std::optional<Tensor>& weight, int64_t reduction, Tensor& grad_input) {
  write_out(grad_input, tpu_multi_margin_loss_backward(grad_output, self, target, p, margin, weight, reduction));
  return grad_input;
}

// ---- multilabel_margin_loss ---------------------------------------------------------------

void check_multilabel(const Tensor& self, const Tensor& target) {
  check_input(self, "multilabel_margin_loss_forward_out_frame");
  TORCH_CHECK(target.sizes() == self.sizes(), "inconsistent target size: ", target.sizes(), " for input of size: ",
              self.sizes());
  check_long(target);
}

std::tuple<Tensor, Tensor> tpu_multilabel_margin_loss_forward(const Tensor& self, const Tensor& target,
                                                          int64_t reduction) {
  check_multilabel(self, target);
  const ops::LossReduction r = loss_reduction(reduction);
  OpCall call{"aten::multilabel_margin_loss_forward", std::to_string(reduction),
              {as_matrix(self), as_matrix(target)}, {}};
  auto out = run_op(call, [=](hlo::Builder& b, const Values& t, const Values&) {
    ops::MarginLoss l = ops::lower_multilabel_margin_loss(b, t[0], t[1], r);
    return Values{l.loss, l.is_target, l.violated};
  });
  defer_check(out.at(2), CheckError::kRuntime, "multilabel_margin_loss: argument #2 'target' is out of range");
  Tensor loss = out[0];
  if (r == ops::LossReduction::kNone && self.dim() <= 1) loss = loss.reshape({});
  return {loss, out[1].reshape(self.sizes())};
}

std::tuple<Tensor&, Tensor&> tpu_multilabel_margin_loss_forward_out(const Tensor& self, const Tensor& target,
                                                                int64_t reduction, Tensor& output,
                                                                Tensor& is_target) {
  auto [loss, targets] = tpu_multilabel_margin_loss_forward(self, target, reduction);
  write_out(output, loss);
  write_out(is_target, targets);
  return {output, is_target};
}

Tensor tpu_multilabel_margin_loss_backward(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                       int64_t reduction, const Tensor& /*is_target: recomputed*/) {
  check_multilabel(self, target);
  const ops::LossReduction r = loss_reduction(reduction);
  const int64_t n = as_matrix(self).size(0);
  Tensor grad = r == ops::LossReduction::kNone ? grad_output.reshape({n}) : grad_output.reshape({});
  OpCall call{"aten::multilabel_margin_loss_backward", std::to_string(reduction),
              {grad, as_matrix(self), as_matrix(target)}, {}};
  auto out = run_op(call, [=](hlo::Builder& b, const Values& t, const Values&) {
    return Values{ops::lower_multilabel_margin_loss_backward(b, t[0], t[1], t[2], r)};
  });
  return out.at(0).reshape(self.sizes());
}

Tensor& tpu_multilabel_margin_loss_backward_out(const Tensor& grad_output, const Tensor& self, const Tensor& target,
                                            int64_t reduction, const Tensor& is_target, Tensor& grad_input) {
  write_out(grad_input, tpu_multilabel_margin_loss_backward(grad_output, self, target, reduction, is_target));
  return grad_input;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("multi_margin_loss", tpu_multi_margin_loss);
  m.impl("multi_margin_loss.out", tpu_multi_margin_loss_out);
  m.impl("multi_margin_loss_backward", tpu_multi_margin_loss_backward);
  m.impl("multi_margin_loss_backward.grad_input", tpu_multi_margin_loss_backward_out);
  m.impl("multilabel_margin_loss_forward", tpu_multilabel_margin_loss_forward);
  m.impl("multilabel_margin_loss_forward.output", tpu_multilabel_margin_loss_forward_out);
  m.impl("multilabel_margin_loss_backward", tpu_multilabel_margin_loss_backward);
  m.impl("multilabel_margin_loss_backward.grad_input", tpu_multilabel_margin_loss_backward_out);
}

}  // namespace torch_tpu::aten
