// ATen glue for the fused optimizer steps (torch.optim.Adam / AdamW / SGD /
// Adagrad with fused=True): every parameter of a call is updated by ONE
// program, with the learning rate (a float or a tensor), betas, eps and
// weight decay as runtime inputs, so a scheduler never causes a recompile.
// grad_scale / found_inf (GradScaler) are read on the device: no host sync.
// The math is in csrc/ops/optim/fused_optimizers.cc.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "ops/optim/fused_optimizers.h"

namespace torch_tpu::aten {

namespace {

using at::TensorList;

// Builds a call whose small inputs (0-dim tensors on tpu or CPU, numbers)
// are f32, or f64 when a parameter is float64 (as CPU's kernels compute a
// double parameter's step in double): tpu tensors become operands, the rest
// runtime scalars.
struct Call {
  OpCall op;
  ElementType scalar_type = ElementType::kF32;
  Call(const char* name, TensorList params) : op{name, "", {}, {}} {
    for (const at::Tensor& p : params) {
      if (p.scalar_type() == c10::kDouble) scalar_type = ElementType::kF64;
    }
    op.attributes.push_back(static_cast<char>(scalar_type));
  }

  ArgSlot tensor(const at::Tensor& t) { return slot(add_arg(op, t, scalar_type)); }
  // A temporary (a 1-element tensor reshaped to 0-dim) is kept by the call.
  ArgSlot tensor(at::Tensor&& t) { return slot(add_arg(op, std::move(t), scalar_type)); }
  ArgSlot number(double v) {
    op.scalars.push_back({scalar_type, v});
    op.attributes.push_back('n');
    return {true, op.scalars.size() - 1};
  }
  std::optional<ArgSlot> optional(const std::optional<at::Tensor>& t) {
    if (!t || !t->defined()) {
      op.attributes.push_back('-');
      return std::nullopt;
    }
    return tensor(*t);
  }
  void flag(bool v) { op.attributes.push_back(v ? '1' : '0'); }

 private:
  ArgSlot slot(ArgSlot s) {
    append_slot(op.attributes, s);
    return s;
  }
};

// A state step of one element, as a 0-dim operand (a reshaped temporary is
// kept by the call; `c.tensor(cond ? t : t.reshape({}))` would borrow a
// const temporary).
ArgSlot step_slot(Call& c, const at::Tensor& step) {
  return step.dim() == 0 ? c.tensor(step) : c.tensor(step.reshape({}));
}

std::optional<hlo::Value> pick(const std::optional<ArgSlot>& slot, const std::vector<hlo::Value>& t,
                               const std::vector<hlo::Value>& s) {
  if (!slot) return std::nullopt;
  return slot->pick(t, s);
}

void check_list(const char* op, const char* what, TensorList params, TensorList list) {
  TORCH_CHECK(list.size() == params.size(), op, ": expected ", what, " to have ", params.size(),
              " tensors, got ", list.size());
  for (size_t i = 0; i < list.size(); ++i) {
    TORCH_CHECK(list[i].defined(), op, ": ", what, "[", i, "] is undefined");
    TORCH_CHECK(list[i].sizes() == params[i].sizes(), op, ": ", what, "[", i, "] has shape ", list[i].sizes(),
                " but the parameter has shape ", params[i].sizes());
    TORCH_CHECK(list[i].device() == params[i].device(), "Expected all tensors to be on the same device, but found "
                "at least two devices, ", params[i].device(), " and ", list[i].device(), "! (when checking arguments for ",
                op, ")");
  }
}

void check_params(const char* op, TensorList params) {
  for (size_t i = 0; i < params.size(); ++i) {
    TORCH_CHECK(params[i].defined() && c10::isFloatingType(params[i].scalar_type()), op,
                ": parameters must be floating point tensors");
    TORCH_CHECK(params[i].device().type() == c10::DeviceType::PrivateUse1, op, ": expected tpu parameters, got ",
                params[i].device());
  }
}

// A scalar that may come as a tensor (lr) or as a number.
ArgSlot lr_slot(Call& c, const std::optional<at::Tensor>& lr_tensor, double lr) {
  if (lr_tensor) {
    TORCH_CHECK(lr_tensor->numel() == 1, c.op.name, ": lr must be a 1-element tensor");
    return lr_tensor->dim() == 0 ? c.tensor(*lr_tensor) : c.tensor(lr_tensor->reshape({}));
  }
  return c.number(lr);
}

// ---- Adam / AdamW ----------------------------------------------------------------------------

void fused_adam(const char* name, bool adamw, TensorList params, TensorList grads, TensorList exp_avgs,
                TensorList exp_avg_sqs, TensorList max_exp_avg_sqs, TensorList state_steps,
                const std::optional<at::Tensor>& lr_tensor, double lr, double beta1, double beta2,
                double weight_decay, double eps, bool amsgrad, bool maximize,
                const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  if (params.empty()) return;
  check_params(name, params);
  check_list(name, "grads", params, grads);
  check_list(name, "exp_avgs", params, exp_avgs);
  check_list(name, "exp_avg_sqs", params, exp_avg_sqs);
  if (amsgrad) check_list(name, "max_exp_avg_sqs", params, max_exp_avg_sqs);
  TORCH_CHECK(state_steps.size() == params.size(), name, ": expected one step per parameter");
  for (const at::Tensor& s : state_steps) TORCH_CHECK(s.numel() == 1, name, ": a state step must have one element");

  Call c(name, params);
  ops::AdamOptions o;
  o.amsgrad = amsgrad;
  o.maximize = maximize;
  o.decoupled_weight_decay = adamw;
  o.weight_decay = weight_decay != 0;
  c.flag(o.amsgrad);
  c.flag(o.maximize);
  c.flag(o.decoupled_weight_decay);
  c.flag(o.weight_decay);
  const ArgSlot lr_s = lr_slot(c, lr_tensor, lr);
  const ArgSlot b1 = c.number(beta1), b2 = c.number(beta2), wd = c.number(weight_decay), ep = c.number(eps);
  const auto gs = c.optional(grad_scale);
  const auto fi = c.optional(found_inf);
  struct Slots {
    ArgSlot p, g, m, v, step;
    std::optional<ArgSlot> max_v;
  };
  std::vector<Slots> slots;
  std::vector<at::Tensor> dsts;
  for (size_t i = 0; i < params.size(); ++i) {
    Slots s{c.tensor(params[i]), c.tensor(grads[i]), c.tensor(exp_avgs[i]), c.tensor(exp_avg_sqs[i]),
            step_slot(c, state_steps[i]), std::nullopt};
    if (amsgrad) s.max_v = c.tensor(max_exp_avg_sqs[i]);
    slots.push_back(s);
    dsts.push_back(params[i]);
    if (gs) dsts.push_back(grads[i]);
    dsts.push_back(exp_avgs[i]);
    dsts.push_back(exp_avg_sqs[i]);
    if (amsgrad) dsts.push_back(max_exp_avg_sqs[i]);
  }
  const bool write_grads = gs.has_value();
  run_op_into(c.op, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    ops::AdamScalars scalars{lr_s.pick(t, s), b1.pick(t, s), b2.pick(t, s), wd.pick(t, s), ep.pick(t, s)};
    ops::AmpInputs amp{pick(gs, t, s), pick(fi, t, s)};
    std::vector<hlo::Value> out;
    for (const Slots& e : slots) {
      auto r = ops::lower_adam_step(b, o, scalars, amp, e.p.pick(t, s), e.g.pick(t, s), e.m.pick(t, s),
                                    e.v.pick(t, s), pick(e.max_v, t, s), e.step.pick(t, s));
      for (size_t k = 0; k < r.size(); ++k) {
        if (k == 1 && !write_grads) continue;
        out.push_back(r[k]);
      }
    }
    return out;
  }, dsts);
}

void adam_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
           TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
           double weight_decay, double eps, bool amsgrad, bool maximize,
           const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adam("aten::_fused_adam_", false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
             std::nullopt, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void adam_tensor_lr_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                     TensorList max_exp_avg_sqs, TensorList state_steps, const at::Tensor& lr, double beta1,
                     double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                     const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adam("aten::_fused_adam_", false, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
             0.0, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void adamw_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
            TensorList max_exp_avg_sqs, TensorList state_steps, double lr, double beta1, double beta2,
            double weight_decay, double eps, bool amsgrad, bool maximize,
            const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adam("aten::_fused_adamw_", true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps,
             std::nullopt, lr, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}
void adamw_tensor_lr_(TensorList self, TensorList grads, TensorList exp_avgs, TensorList exp_avg_sqs,
                      TensorList max_exp_avg_sqs, TensorList state_steps, const at::Tensor& lr, double beta1,
                      double beta2, double weight_decay, double eps, bool amsgrad, bool maximize,
                      const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adam("aten::_fused_adamw_", true, self, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps, lr,
             0.0, beta1, beta2, weight_decay, eps, amsgrad, maximize, grad_scale, found_inf);
}

// ---- SGD -------------------------------------------------------------------------------------

void fused_sgd(TensorList params, TensorList grads, TensorList momentum_buffers, double weight_decay,
               double momentum, const std::optional<at::Tensor>& lr_tensor, double lr, double dampening,
               bool nesterov, bool maximize, bool is_first_step, const std::optional<at::Tensor>& grad_scale,
               const std::optional<at::Tensor>& found_inf) {
  const char* name = "aten::_fused_sgd_";
  if (params.empty()) return;
  check_params(name, params);
  check_list(name, "grads", params, grads);
  const bool use_momentum = momentum != 0;
  if (use_momentum) check_list(name, "momentum_buffer_list", params, momentum_buffers);
  Call c(name, params);
  ops::SgdOptions o;
  o.maximize = maximize;
  o.nesterov = nesterov;
  o.weight_decay = weight_decay != 0;
  o.momentum = use_momentum;
  o.first_step = is_first_step;
  c.flag(o.maximize);
  c.flag(o.nesterov);
  c.flag(o.weight_decay);
  c.flag(o.momentum);
  c.flag(o.first_step);
  const ArgSlot lr_s = lr_slot(c, lr_tensor, lr);
  const ArgSlot wd = c.number(weight_decay), mom = c.number(momentum), damp = c.number(dampening);
  const auto gs = c.optional(grad_scale);
  const auto fi = c.optional(found_inf);
  struct Slots {
    ArgSlot p, g;
    std::optional<ArgSlot> buf;
  };
  std::vector<Slots> slots;
  std::vector<at::Tensor> dsts;
  for (size_t i = 0; i < params.size(); ++i) {
    Slots s{c.tensor(params[i]), c.tensor(grads[i]), std::nullopt};
    // A first step overwrites the (uninitialized) buffer without reading it,
    // unless found_inf may keep it as it was.
    if (use_momentum && (!is_first_step || fi)) s.buf = c.tensor(momentum_buffers[i]);
    slots.push_back(s);
    dsts.push_back(params[i]);
    if (gs) dsts.push_back(grads[i]);
    if (use_momentum) dsts.push_back(momentum_buffers[i]);
  }
  const bool write_grads = gs.has_value();
  run_op_into(c.op, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    ops::SgdScalars scalars{lr_s.pick(t, s), wd.pick(t, s), mom.pick(t, s), damp.pick(t, s)};
    ops::AmpInputs amp{pick(gs, t, s), pick(fi, t, s)};
    std::vector<hlo::Value> out;
    for (const Slots& e : slots) {
      hlo::Value p = e.p.pick(t, s);
      // The first step's previous buffer is read only for found_inf to keep.
      std::optional<hlo::Value> buf = pick(e.buf, t, s);
      if (o.momentum && !buf) buf = b.constant_splat(0, p.type());
      auto r = ops::lower_sgd_step(b, o, scalars, amp, p, e.g.pick(t, s), buf);
      for (size_t k = 0; k < r.size(); ++k) {
        if (k == 1 && !write_grads) continue;
        out.push_back(r[k]);
      }
    }
    return out;
  }, dsts);
}

void sgd_(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay, double momentum,
          double lr, double dampening, bool nesterov, bool maximize, bool is_first_step,
          const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_sgd(self, grads, momentum_buffer_list, weight_decay, momentum, std::nullopt, lr, dampening, nesterov,
            maximize, is_first_step, grad_scale, found_inf);
}
void sgd_tensor_lr_(TensorList self, TensorList grads, TensorList momentum_buffer_list, double weight_decay,
                    double momentum, const at::Tensor& lr, double dampening, bool nesterov, bool maximize,
                    bool is_first_step, const std::optional<at::Tensor>& grad_scale,
                    const std::optional<at::Tensor>& found_inf) {
  fused_sgd(self, grads, momentum_buffer_list, weight_decay, momentum, lr, 0.0, dampening, nesterov, maximize,
            is_first_step, grad_scale, found_inf);
}

// ---- Adagrad ---------------------------------------------------------------------------------

void fused_adagrad(TensorList params, TensorList grads, TensorList state_sums, TensorList state_steps,
                   const std::optional<at::Tensor>& lr_tensor, double lr, double lr_decay, double weight_decay,
                   double eps, bool maximize, const std::optional<at::Tensor>& grad_scale,
                   const std::optional<at::Tensor>& found_inf) {
  const char* name = "aten::_fused_adagrad_";
  if (params.empty()) return;
  check_params(name, params);
  check_list(name, "grads", params, grads);
  check_list(name, "state_sums", params, state_sums);
  TORCH_CHECK(state_steps.size() == params.size(), name, ": expected one step per parameter");
  for (const at::Tensor& s : state_steps) TORCH_CHECK(s.numel() == 1, name, ": a state step must have one element");
  Call c(name, params);
  ops::AdagradOptions o;
  o.maximize = maximize;
  o.weight_decay = weight_decay != 0;
  c.flag(o.maximize);
  c.flag(o.weight_decay);
  const ArgSlot lr_s = lr_slot(c, lr_tensor, lr);
  const ArgSlot decay = c.number(lr_decay), wd = c.number(weight_decay), ep = c.number(eps);
  const auto gs = c.optional(grad_scale);
  const auto fi = c.optional(found_inf);
  struct Slots {
    ArgSlot p, g, sum, step;
  };
  std::vector<Slots> slots;
  std::vector<at::Tensor> dsts;
  for (size_t i = 0; i < params.size(); ++i) {
    slots.push_back({c.tensor(params[i]), c.tensor(grads[i]), c.tensor(state_sums[i]),
                     step_slot(c, state_steps[i])});
    dsts.push_back(params[i]);
    if (gs) dsts.push_back(grads[i]);
    dsts.push_back(state_sums[i]);
  }
  const bool write_grads = gs.has_value();
  run_op_into(c.op, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    ops::AdagradScalars scalars{lr_s.pick(t, s), decay.pick(t, s), wd.pick(t, s), ep.pick(t, s)};
    ops::AmpInputs amp{pick(gs, t, s), pick(fi, t, s)};
    std::vector<hlo::Value> out;
    for (const Slots& e : slots) {
      auto r = ops::lower_adagrad_step(b, o, scalars, amp, e.p.pick(t, s), e.g.pick(t, s), e.sum.pick(t, s),
                                       e.step.pick(t, s));
      for (size_t k = 0; k < r.size(); ++k) {
        if (k == 1 && !write_grads) continue;
        out.push_back(r[k]);
      }
    }
    return out;
  }, dsts);
}

void adagrad_(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps, double lr,
              double lr_decay, double weight_decay, double eps, bool maximize,
              const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adagrad(self, grads, state_sums, state_steps, std::nullopt, lr, lr_decay, weight_decay, eps, maximize,
                grad_scale, found_inf);
}
void adagrad_tensor_lr_(TensorList self, TensorList grads, TensorList state_sums, TensorList state_steps,
                        const at::Tensor& lr, double lr_decay, double weight_decay, double eps, bool maximize,
                        const std::optional<at::Tensor>& grad_scale, const std::optional<at::Tensor>& found_inf) {
  fused_adagrad(self, grads, state_sums, state_steps, lr, 0.0, lr_decay, weight_decay, eps, maximize, grad_scale,
                found_inf);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_fused_adam_", adam_);
  m.impl("_fused_adam_.tensor_lr", adam_tensor_lr_);
  m.impl("_fused_adamw_", adamw_);
  m.impl("_fused_adamw_.tensor_lr", adamw_tensor_lr_);
  m.impl("_fused_sgd_", sgd_);
  m.impl("_fused_sgd_.tensor_lr", sgd_tensor_lr_);
  m.impl("_fused_adagrad_", adagrad_);
  m.impl("_fused_adagrad_.tensor_lr", adagrad_tensor_lr_);
}

}  // namespace torch_tpu::aten
