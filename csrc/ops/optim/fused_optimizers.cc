#include "ops/optim/fused_optimizers.h"

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

using hlo::Value;

// A 0-dim value converted to `type` and broadcast to `like`'s shape.
Value splat(hlo::Builder& b, const Value& scalar, const Value& like) {
  return broadcast_to(b, convert_to(b, scalar, like.dtype()), like.dims());
}

Value constant(hlo::Builder& b, double v, ElementType type) {
  return b.constant_splat(v, hlo::TensorType::scalar(type));
}

// The type of the per-step factors (bias corrections, decayed lr): f64 for
// a double parameter, as CPU's kernels compute them, else f32.
ElementType factor_type(ElementType c) { return c == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32; }

// The gradient in `c`, unscaled when a grad scale is given.
Value unscaled(hlo::Builder& b, const Value& grad, const AmpInputs& amp, ElementType c) {
  Value g = convert_to(b, grad, c);
  if (amp.grad_scale) g = b.divide(g, splat(b, *amp.grad_scale, g));
  return g;
}

// With found_inf set, every output keeps its input.
std::vector<Value> keep_when_inf(hlo::Builder& b, const AmpInputs& amp, const std::vector<Value>& old_values,
                                 std::vector<Value> new_values) {
  if (!amp.found_inf) return new_values;
  Value f = convert_to(b, *amp.found_inf, ElementType::kF32);
  Value skip = b.compare(f, b.constant_splat(0, f.type()), "NE");
  for (size_t i = 0; i < new_values.size(); ++i) {
    Value old_value = convert_to(b, old_values[i], new_values[i].dtype());
    Value pred = broadcast_to(b, skip, new_values[i].dims());
    new_values[i] = b.select(pred, old_value, new_values[i]);
  }
  return new_values;
}

}  // namespace

std::vector<Value> lower_adam_step(hlo::Builder& b, const AdamOptions& o, const AdamScalars& s,
                                   const AmpInputs& amp, const Value& param, const Value& grad,
                                   const Value& exp_avg, const Value& exp_avg_sq,
                                   const std::optional<Value>& max_exp_avg_sq, const Value& step) {
  const ElementType c = accumulation_type(param.dtype());
  // Per-step factors, computed once on the 0-dim values.
  auto sc = [&](const Value& v) { return convert_to(b, v, factor_type(c)); };
  const Value one = constant(b, 1, factor_type(c));
  Value t = sc(step);
  Value lr = sc(s.lr);
  Value bias_correction1 = b.subtract(one, b.power(sc(s.beta1), t));
  Value bias_correction2 = b.subtract(one, b.power(sc(s.beta2), t));
  Value step_size = b.divide(lr, bias_correction1);
  Value bias_correction2_sqrt = b.sqrt(bias_correction2);

  Value p = convert_to(b, param, c);
  Value g = unscaled(b, grad, amp, c);
  Value grad_out = g;
  if (o.maximize) g = b.negate(g);
  if (o.weight_decay) {
    if (o.decoupled_weight_decay) {
      p = b.multiply(p, splat(b, b.subtract(one, b.multiply(lr, sc(s.weight_decay))), p));
    } else {
      g = b.add(g, b.multiply(p, splat(b, s.weight_decay, p)));
    }
  }
  Value m = convert_to(b, exp_avg, c);
  Value v = convert_to(b, exp_avg_sq, c);
  Value beta1 = splat(b, s.beta1, g);
  Value beta2 = splat(b, s.beta2, g);
  Value one_c = b.constant_splat(1, g.type());
  m = b.add(b.multiply(m, beta1), b.multiply(g, b.subtract(one_c, beta1)));
  // (1 - beta2) * grad first, as CPU's and CUDA's kernels: grad * grad alone overflows above 1.8e19.
  v = b.add(b.multiply(v, beta2), b.multiply(b.multiply(b.subtract(one_c, beta2), g), g));
  Value second = v;
  std::optional<Value> max_v;
  if (o.amsgrad) {
    max_v = b.maximum(convert_to(b, *max_exp_avg_sq, c), v);
    second = *max_v;
  }
  Value denom = b.add(b.divide(b.sqrt(second), splat(b, bias_correction2_sqrt, second)), splat(b, s.eps, second));
  p = b.subtract(p, b.divide(b.multiply(splat(b, step_size, m), m), denom));

  std::vector<Value> old_values{param, grad, exp_avg, exp_avg_sq};
  std::vector<Value> new_values{p, grad_out, m, v};
  if (o.amsgrad) {
    old_values.push_back(*max_exp_avg_sq);
    new_values.push_back(*max_v);
  }
  return keep_when_inf(b, amp, old_values, std::move(new_values));
}

std::vector<Value> lower_sgd_step(hlo::Builder& b, const SgdOptions& o, const SgdScalars& s, const AmpInputs& amp,
                                  const Value& param, const Value& grad, const std::optional<Value>& momentum_buffer) {
  const ElementType c = accumulation_type(param.dtype());
  Value p = convert_to(b, param, c);
  Value g = unscaled(b, grad, amp, c);
  Value grad_out = g;
  if (o.maximize) g = b.negate(g);
  if (o.weight_decay) g = b.add(g, b.multiply(p, splat(b, s.weight_decay, p)));
  std::optional<Value> buf;
  if (o.momentum) {
    if (o.first_step) {
      buf = g;
    } else {
      Value mom = splat(b, s.momentum, g);
      Value damp = splat(b, s.dampening, g);
      Value prev = convert_to(b, *momentum_buffer, c);
      buf = b.add(b.multiply(prev, mom), b.multiply(g, b.subtract(b.constant_splat(1, g.type()), damp)));
    }
    g = o.nesterov ? b.add(g, b.multiply(*buf, splat(b, s.momentum, g))) : *buf;
  }
  p = b.subtract(p, b.multiply(g, splat(b, s.lr, g)));
  std::vector<Value> old_values{param, grad};
  std::vector<Value> new_values{p, grad_out};
  if (o.momentum) {
    old_values.push_back(*momentum_buffer);
    new_values.push_back(*buf);
  }
  return keep_when_inf(b, amp, old_values, std::move(new_values));
}

std::vector<Value> lower_adagrad_step(hlo::Builder& b, const AdagradOptions& o, const AdagradScalars& s,
                                      const AmpInputs& amp, const Value& param, const Value& grad,
                                      const Value& state_sum, const Value& step) {
  const ElementType c = accumulation_type(param.dtype());
  auto sc = [&](const Value& v) { return convert_to(b, v, factor_type(c)); };
  const Value one = constant(b, 1, factor_type(c));
  // clr = lr / (1 + (step - 1) * lr_decay)
  Value clr = b.divide(sc(s.lr), b.add(one, b.multiply(b.subtract(sc(step), one), sc(s.lr_decay))));

  Value p = convert_to(b, param, c);
  Value g = unscaled(b, grad, amp, c);
  Value grad_out = g;
  if (o.maximize) g = b.negate(g);
  if (o.weight_decay) g = b.add(g, b.multiply(p, splat(b, s.weight_decay, p)));
  Value sum = b.add(convert_to(b, state_sum, c), b.multiply(g, g));
  Value std_dev = b.add(b.sqrt(sum), splat(b, s.eps, sum));
  p = b.subtract(p, b.divide(b.multiply(g, splat(b, clr, g)), std_dev));
  return keep_when_inf(b, amp, {param, grad, state_sum}, {p, grad_out, sum});
}

}  // namespace torch_tpu::ops
