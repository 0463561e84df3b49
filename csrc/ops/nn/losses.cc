#include "ops/nn/losses.h"

#include <limits>
#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

std::vector<int64_t> all_dims(const hlo::Value& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.rank(); ++d) dims.push_back(d);
  return dims;
}

hlo::Value sum_all(hlo::Builder& b, const hlo::Value& x) {
  if (x.rank() == 0) return x;
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, all_dims(x), [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

hlo::Value splat(hlo::Builder& b, double v, const hlo::Value& like) { return b.constant_splat(v, like.type()); }

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

// Per-element losses (acc) reduced as asked, in `out`. The mean of nothing
// is NaN, as on CPU.
hlo::Value reduce_loss(hlo::Builder& b, const hlo::Value& loss, LossReduction reduction, ElementType out) {
  if (reduction == LossReduction::kNone) return convert_to(b, loss, out);
  hlo::Value total = sum_all(b, loss);
  if (reduction == LossReduction::kMean) {
    total = b.divide(total, splat(b, static_cast<double>(count(loss.dims())), total));
  }
  return convert_to(b, total, out);
}

// The upstream gradient over `dims`: itself (kNone) or its 0-dim value
// spread, divided by mean_count for kMean.
hlo::Value upstream(hlo::Builder& b, const hlo::Value& grad, LossReduction reduction, int64_t mean_count,
                    const std::vector<int64_t>& dims) {
  if (reduction == LossReduction::kNone) return broadcast_to(b, grad, dims);
  // Usually one element; a reduced loss's double backward passes a
  // gradient of the input's shape, which CPU broadcasts as well.
  hlo::Value g = grad.type().num_elements() == 1 ? b.reshape(grad, {}) : grad;
  if (reduction == LossReduction::kMean) g = b.divide(g, splat(b, static_cast<double>(mean_count), g));
  return broadcast_to(b, g, dims);
}

}  // namespace

BinaryCrossEntropyOutputs lower_binary_cross_entropy(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                                                     const std::optional<hlo::Value>& weight, LossReduction reduction) {
  const ElementType acc = accumulation_type(self.dtype());
  hlo::Value x = convert_to(b, self, acc);
  hlo::Value t = broadcast_to(b, convert_to(b, target, acc), x.dims());
  hlo::Value floor = splat(b, -100, x);
  hlo::Value log_x = b.maximum(b.log(x), floor);
  hlo::Value log_1mx = b.maximum(b.log_plus_one(b.negate(x)), floor);
  // (t - 1) * log(1 - x) - t * log(x)
  hlo::Value loss = b.subtract(b.multiply(b.subtract(t, splat(b, 1, t)), log_1mx), b.multiply(t, log_x));
  if (weight) loss = b.multiply(loss, broadcast_to(b, convert_to(b, *weight, acc), x.dims()));
  // NaN fails both comparisons, as it fails CPU's check.
  auto outside_unit = [&](const hlo::Value& v) {
    hlo::Value bad = b.not_(b.and_(b.compare(v, splat(b, 0, v), "GE"), b.compare(v, splat(b, 1, v), "LE")));
    if (v.rank() == 0) return bad;
    hlo::Value init = b.constant_splat(0, hlo::TensorType::scalar(ElementType::kPred));
    return b.reduce({bad}, {init}, all_dims(bad), [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
      return std::vector<hlo::Value>{rb.or_(a[0], a[1])};
    })[0];
  };
  // One error per call, as CPU raises one: the target's only when the input is fine.
  hlo::Value input_bad = outside_unit(x);
  return {reduce_loss(b, loss, reduction, self.dtype()), input_bad, b.and_(b.not_(input_bad), outside_unit(t))};
}

hlo::Value lower_binary_cross_entropy_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                               const hlo::Value& target, const std::optional<hlo::Value>& weight,
                                               LossReduction reduction) {
  const ElementType acc = accumulation_type(self.dtype());
  const auto& dims = self.dims();
  hlo::Value x = convert_to(b, self, acc);
  hlo::Value t = broadcast_to(b, convert_to(b, target, acc), dims);
  hlo::Value g = upstream(b, convert_to(b, grad_output, acc), reduction, count(dims), dims);
  hlo::Value denom = b.maximum(b.multiply(b.subtract(splat(b, 1, x), x), x), splat(b, 1e-12, x));
  hlo::Value grad = b.divide(b.multiply(g, b.subtract(x, t)), denom);
  if (weight) grad = b.multiply(grad, broadcast_to(b, convert_to(b, *weight, acc), dims));
  return convert_to(b, grad, self.dtype());
}

hlo::Value lower_binary_cross_entropy_with_logits(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                                                  const std::optional<hlo::Value>& weight,
                                                  const std::optional<hlo::Value>& pos_weight,
                                                  LossReduction reduction) {
  const ElementType acc = accumulation_type(self.dtype());
  const auto& dims = self.dims();
  hlo::Value x = convert_to(b, self, acc);
  hlo::Value t = broadcast_to(b, convert_to(b, target, acc), dims);
  hlo::Value one = splat(b, 1, x);
  // log_sigmoid(x) = min(x, 0) - log1p(exp(-|x|)), stable for any x
  hlo::Value log_sigmoid = b.subtract(b.minimum(x, splat(b, 0, x)), b.log_plus_one(b.exponential(b.negate(b.abs(x)))));
  hlo::Value log_weight = one;
  if (pos_weight) {
    hlo::Value pw = broadcast_to(b, convert_to(b, *pos_weight, acc), dims);
    log_weight = b.add(b.multiply(b.subtract(pw, one), t), one);
  }
  hlo::Value loss = b.subtract(b.multiply(b.subtract(one, t), x), b.multiply(log_weight, log_sigmoid));
  if (weight) loss = b.multiply(loss, broadcast_to(b, convert_to(b, *weight, acc), dims));
  return reduce_loss(b, loss, reduction, self.dtype());
}

hlo::Value lower_piecewise_loss(hlo::Builder& b, PiecewiseLoss kind, const hlo::Value& self, const hlo::Value& target,
                                const hlo::Value& param, LossReduction reduction, ElementType out) {
  const ElementType acc = accumulation_type(out);
  const auto dims = broadcast_shapes(self.dims(), target.dims(), "aten::smooth_l1_loss");
  hlo::Value z = b.abs(b.subtract(broadcast_to(b, convert_to(b, self, acc), dims),
                                  broadcast_to(b, convert_to(b, target, acc), dims)));
  hlo::Value p = b.broadcast_in_dim(convert_to(b, param, acc), dims, {});
  hlo::Value half = splat(b, 0.5, z);
  hlo::Value inside = b.compare(z, p, "LT");
  hlo::Value square = b.multiply(half, b.multiply(z, z));
  hlo::Value loss;
  if (kind == PiecewiseLoss::kSmoothL1) {
    loss = b.select(inside, b.divide(square, p), b.subtract(z, b.multiply(half, p)));
  } else {
    loss = b.select(inside, square, b.multiply(p, b.subtract(z, b.multiply(half, p))));
  }
  return reduce_loss(b, loss, reduction, out);
}

hlo::Value lower_piecewise_loss_backward(hlo::Builder& b, PiecewiseLoss kind, const hlo::Value& grad_output,
                                         const hlo::Value& self, const hlo::Value& target, const hlo::Value& param,
                                         LossReduction reduction, int64_t mean_count, ElementType out) {
  const ElementType acc = accumulation_type(out);
  auto dims = broadcast_shapes(self.dims(), target.dims(), "aten::smooth_l1_loss_backward");
  if (reduction == LossReduction::kNone || grad_output.type().num_elements() != 1) {
    dims = broadcast_shapes(dims, grad_output.dims(), "aten::smooth_l1_loss_backward");
  }
  hlo::Value d = b.subtract(broadcast_to(b, convert_to(b, self, acc), dims),
                            broadcast_to(b, convert_to(b, target, acc), dims));
  hlo::Value g = upstream(b, convert_to(b, grad_output, acc), reduction, mean_count, dims);
  hlo::Value p = b.broadcast_in_dim(convert_to(b, param, acc), dims, {});
  // As CPU: d <= -p gives the negative slope, d >= p the positive one
  // (for p = 0 a zero difference takes the negative slope).
  hlo::Value slope = kind == PiecewiseLoss::kSmoothL1 ? splat(b, 1, d) : p;
  hlo::Value middle = kind == PiecewiseLoss::kSmoothL1 ? b.divide(d, p) : d;
  hlo::Value grad = b.select(b.compare(d, b.negate(p), "LE"), b.negate(slope),
                             b.select(b.compare(d, p, "GE"), slope, middle));
  return convert_to(b, b.multiply(grad, g), out);
}

}  // namespace torch_tpu::ops
