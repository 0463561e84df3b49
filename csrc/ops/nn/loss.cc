#include "ops/nn/loss.h"

#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

ElementType compute_type(ElementType t) {
  return t == ElementType::kBF16 || t == ElementType::kF16 ? ElementType::kF32 : t;
}

std::vector<int64_t> all_dims(const hlo::Value& x) {
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < x.rank(); ++d) dims.push_back(d);
  return dims;
}

hlo::Value sum_over(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  if (dims.empty()) return x;
  hlo::Value zero = b.constant_splat(0, hlo::TensorType::scalar(x.dtype()));
  return b.reduce({x}, {zero}, dims, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
}

hlo::Value zeros_like(hlo::Builder& b, const hlo::Value& x) { return b.constant_splat(0, x.type()); }

// How the targets select classes of self.
struct Selection {
  int64_t class_dim;
  hlo::Value one_hot;  // self's shape: the target class of each element's row
  hlo::Value counted;  // target's shape: the target is not ignore_index
  hlo::Value weight;   // target's shape, acc type: the target's class weight, 0 where not counted
};

// Target (shape of self without the class dim) to self's shape.
hlo::Value along_classes(hlo::Builder& b, const hlo::Value& t, const std::vector<int64_t>& dims, int64_t class_dim) {
  std::vector<int64_t> map;
  for (int64_t d = 0; d < t.rank(); ++d) map.push_back(d < class_dim ? d : d + 1);
  return b.broadcast_in_dim(t, dims, map);
}

Selection select_targets(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                         const std::optional<hlo::Value>& weight, int64_t ignore_index, ElementType acc) {
  Selection s;
  s.class_dim = self.rank() == 1 ? 0 : 1;
  hlo::Value t = convert_to(b, target, ElementType::kS64);  // u8 targets compare with ignore_index too
  hlo::Value classes = b.iota(hlo::TensorType(ElementType::kS64, self.dims()), s.class_dim);
  s.one_hot = b.compare(classes, along_classes(b, t, self.dims(), s.class_dim), "EQ");
  s.counted = b.compare(t, b.constant_splat_int(ignore_index, t.type()), "NE");
  hlo::Value zero_t = b.constant_splat(0, hlo::TensorType(acc, target.dims()));
  if (weight) {
    hlo::Value w = b.broadcast_in_dim(convert_to(b, *weight, acc), self.dims(), {s.class_dim});
    hlo::Value picked = sum_over(b, b.select(s.one_hot, w, b.constant_splat(0, w.type())), {s.class_dim});
    s.weight = b.select(s.counted, picked, zero_t);
  } else {
    s.weight = b.select(s.counted, b.constant_splat(1, zero_t.type()), zero_t);
  }
  return s;
}

}  // namespace

NllLossOutputs lower_nll_loss(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                              const std::optional<hlo::Value>& weight, LossReduction reduction,
                              int64_t ignore_index) {
  const ElementType type = self.dtype();
  const ElementType acc = compute_type(type);
  Selection s = select_targets(b, self, target, weight, ignore_index, acc);
  hlo::Value x = convert_to(b, self, acc);
  hlo::Value picked = sum_over(b, b.select(s.one_hot, x, zeros_like(b, x)), {s.class_dim});
  // Not counted: exactly 0, even where the picked value is inf or NaN.
  hlo::Value loss = b.select(s.counted, b.negate(b.multiply(picked, s.weight)), zeros_like(b, picked));
  hlo::Value scalar_zero = b.constant_splat(0, hlo::TensorType::scalar(type));
  if (reduction == LossReduction::kNone && self.rank() >= 2) return {convert_to(b, loss, type), scalar_zero};
  hlo::Value total = sum_over(b, loss, all_dims(loss));
  hlo::Value total_weight = sum_over(b, s.weight, all_dims(s.weight));
  if (reduction == LossReduction::kMean) total = b.divide(total, total_weight);
  return {convert_to(b, total, type), convert_to(b, total_weight, type)};
}

hlo::Value lower_nll_loss_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                   const hlo::Value& target, const std::optional<hlo::Value>& weight,
                                   LossReduction reduction, int64_t ignore_index, const hlo::Value& total_weight) {
  const ElementType type = self.dtype();
  const ElementType acc = compute_type(type);
  Selection s = select_targets(b, self, target, weight, ignore_index, acc);
  hlo::Value g = convert_to(b, grad_output, acc);
  if (!(reduction == LossReduction::kNone && self.rank() >= 2)) {
    g = b.reshape(g, {});
    if (reduction == LossReduction::kMean) g = b.divide(g, b.reshape(convert_to(b, total_weight, acc), {}));
    g = b.broadcast_in_dim(g, target.dims(), {});
  }
  hlo::Value coeff = b.select(s.counted, b.negate(b.multiply(g, s.weight)), zeros_like(b, s.weight));
  hlo::Value spread = along_classes(b, coeff, self.dims(), s.class_dim);
  return convert_to(b, b.select(s.one_hot, spread, zeros_like(b, spread)), type);
}

hlo::Value lower_mse_loss(hlo::Builder& b, const hlo::Value& self, const hlo::Value& target,
                          LossReduction reduction, ElementType out) {
  const ElementType acc = compute_type(out);
  const auto dims = broadcast_shapes(self.dims(), target.dims(), "aten::mse_loss");
  hlo::Value diff = b.subtract(broadcast_to(b, convert_to(b, self, acc), dims),
                               broadcast_to(b, convert_to(b, target, acc), dims));
  hlo::Value sq = b.multiply(diff, diff);
  if (reduction == LossReduction::kNone) return convert_to(b, sq, out);
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  hlo::Value total = sum_over(b, sq, all_dims(sq));
  if (reduction == LossReduction::kMean) {
    total = b.divide(total, b.constant_splat(static_cast<double>(n), total.type()));  // n = 0: NaN, as on CPU
  }
  return convert_to(b, total, out);
}

hlo::Value lower_mse_loss_backward(hlo::Builder& b, const hlo::Value& grad_output, const hlo::Value& self,
                                   const hlo::Value& target, LossReduction reduction, int64_t mean_count,
                                   ElementType out) {
  const ElementType acc = compute_type(out);
  auto dims = broadcast_shapes(self.dims(), target.dims(), "aten::mse_loss_backward");
  dims = broadcast_shapes(dims, grad_output.dims(), "aten::mse_loss_backward");
  const double norm = reduction == LossReduction::kMean ? 2.0 / static_cast<double>(mean_count) : 2.0;
  hlo::Value diff = b.subtract(broadcast_to(b, convert_to(b, self, acc), dims),
                               broadcast_to(b, convert_to(b, target, acc), dims));
  hlo::Value g = broadcast_to(b, convert_to(b, grad_output, acc), dims);
  hlo::Value scaled = b.multiply(b.multiply(diff, b.constant_splat(norm, diff.type())), g);
  return convert_to(b, scaled, out);
}

}  // namespace torch_tpu::ops
