#include "ops/nn/margin_losses.h"

#include <vector>

#include "ops/broadcast.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

ElementType compute_type(ElementType t) {
  return t == ElementType::kF16 || t == ElementType::kBF16 ? ElementType::kF32 : t;
}

Value sum_over(hlo::Builder& b, const Value& x, std::vector<int64_t> dims) {
  return b.reduce({x}, {b.constant_splat(0, TensorType::scalar(x.dtype()))}, std::move(dims),
                  [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.add(a[0], a[1])}; })[0];
}

// Per-sample losses [N] reduced as asked, in `out`.
Value reduce_loss(hlo::Builder& b, const Value& per_sample, LossReduction reduction, ElementType out) {
  if (reduction == LossReduction::kNone) return convert_to(b, per_sample, out);
  Value total = sum_over(b, per_sample, {0});
  if (reduction == LossReduction::kMean) {
    total = b.divide(total, b.constant_splat(static_cast<double>(per_sample.dims()[0]), total.type()));
  }
  return convert_to(b, total, out);
}

// The output gradient per sample [N], already divided by N for kMean.
Value per_sample_grad(hlo::Builder& b, const Value& grad_output, LossReduction reduction, int64_t n, ElementType acc) {
  Value g = convert_to(b, grad_output, acc);
  if (reduction == LossReduction::kNone) return g;
  if (reduction == LossReduction::kMean) g = b.divide(g, b.constant_splat(static_cast<double>(n), g.type()));
  return b.broadcast_in_dim(g, {n}, {});
}

// Targets [N] or [N, K] (s64) with a flag for those outside [0, C) (among
// `counted`), clamped into range.
std::pair<Value, Value> clamp_classes(hlo::Builder& b, const Value& target, int64_t classes, const Value& counted) {
  Value t = convert_to(b, target, ElementType::kS64);
  Value outside = b.or_(b.compare(t, b.constant_splat_int(0, t.type()), "LT"),
                        b.compare(t, b.constant_splat_int(classes, t.type()), "GE"));
  Value violated = any_true(b, b.and_(counted, outside));
  Value clamped = b.clamp(b.constant_splat_int(0, TensorType::scalar(ElementType::kS64)), t,
                          b.constant_splat_int(classes - 1, TensorType::scalar(ElementType::kS64)));
  return {clamped, violated};
}

// x [N, C] at the classes `index` [N, K] -> [N, K].
Value at_classes(hlo::Builder& b, const Value& x, const Value& index) { return lower_gather(b, x, index, 1).value; }

// ---- multi_margin ---------------------------------------------------------------------

struct MultiMargin {
  Value z;        // [N, C]: margin - x[y] + x[i]
  Value counted;  // [N, C]: i != y and z > 0
  Value scale;    // [N, 1]: weight[y] (1 without weight)
  Value target;   // [N] s64, clamped
  Value violated;
};

MultiMargin multi_margin(hlo::Builder& b, const Value& x, const Value& target, double margin,
                         const std::optional<Value>& weight) {
  const int64_t n = x.dims()[0], c = x.dims()[1];
  auto [t, violated] = clamp_classes(b, target, c, b.constant_splat_int(1, TensorType(ElementType::kPred, {n})));
  Value t2 = b.reshape(t, {n, 1});
  Value xy = at_classes(b, x, t2);  // [N, 1]
  Value z = b.add(b.subtract(b.constant_splat(margin, x.type()), b.broadcast_in_dim(xy, {n, c}, {0, 1})), x);
  const TensorType classes(ElementType::kS64, {n, c});
  Value not_target = b.compare(b.iota(classes, 1), b.broadcast_in_dim(t2, {n, c}, {0, 1}), "NE");
  Value counted = b.and_(not_target, b.compare(z, b.constant_splat(0, z.type()), "GT"));
  Value scale = b.constant_splat(1, TensorType(x.dtype(), {n, 1}));
  if (weight) {
    Value w = convert_to(b, *weight, x.dtype());
    scale = b.reshape(lower_gather(b, w, t, 0).value, {n, 1});
  }
  return {z, counted, scale, t, violated};
}

}  // namespace

MarginLoss lower_multi_margin_loss(hlo::Builder& b, const Value& self, const Value& target, int64_t p, double margin,
                                   const std::optional<Value>& weight, LossReduction reduction) {
  const int64_t n = self.dims()[0], c = self.dims()[1];
  Value x = convert_to(b, self, compute_type(self.dtype()));
  MultiMargin m = multi_margin(b, x, target, margin, weight);
  Value h = p == 2 ? b.multiply(m.z, m.z) : m.z;
  h = b.multiply(b.select(m.counted, h, b.constant_splat(0, h.type())), b.broadcast_in_dim(m.scale, {n, c}, {0, 1}));
  Value per_sample = b.divide(sum_over(b, h, {1}), b.constant_splat(static_cast<double>(c), TensorType(x.dtype(), {n})));
  return {reduce_loss(b, per_sample, reduction, self.dtype()), Value(), m.violated};
}

Value lower_multi_margin_loss_backward(hlo::Builder& b, const Value& grad_output, const Value& self,
                                       const Value& target, int64_t p, double margin,
                                       const std::optional<Value>& weight, LossReduction reduction) {
  const int64_t n = self.dims()[0], c = self.dims()[1];
  const ElementType acc = compute_type(self.dtype());
  Value x = convert_to(b, self, acc);
  MultiMargin m = multi_margin(b, x, target, margin, weight);
  Value g = b.divide(per_sample_grad(b, grad_output, reduction, n, acc), b.constant_splat(static_cast<double>(c), TensorType(acc, {n})));
  Value gc = b.broadcast_in_dim(g, {n, c}, {0});
  Value h = p == 2 ? b.multiply(b.multiply(b.constant_splat(2, x.type()), gc), m.z) : gc;
  h = b.multiply(b.select(m.counted, h, b.constant_splat(0, h.type())), b.broadcast_in_dim(m.scale, {n, c}, {0, 1}));
  // The target class takes minus the others' sum.
  const TensorType classes(ElementType::kS64, {n, c});
  Value is_target = b.compare(b.iota(classes, 1), b.broadcast_in_dim(m.target, {n, c}, {0}), "EQ");
  Value grad = b.select(is_target, b.broadcast_in_dim(b.negate(sum_over(b, h, {1})), {n, c}, {0}), h);
  return convert_to(b, grad, self.dtype());
}

namespace {

// ---- multilabel_margin ------------------------------------------------------------------

struct MultiLabel {
  Value z;           // [N, K, C]: 1 - x[target[k]] + x[i]
  Value counted;     // [N, K, C]: target k listed, i not a target, z > 0
  Value onehot;      // [N, K, C]: class c is target k (listed)
  Value is_target;   // [N, C]
  Value violated;
};

MultiLabel multilabel(hlo::Builder& b, const Value& x, const Value& target) {
  const int64_t n = x.dims()[0], c = x.dims()[1], k = target.dims()[1];
  const TensorType positions(ElementType::kS64, {n, k});
  Value raw = convert_to(b, target, ElementType::kS64);
  // The list ends at the first -1.
  Value end = b.reduce({b.select(b.compare(raw, b.constant_splat_int(-1, positions), "EQ"), b.iota(positions, 1),
                                 b.constant_splat_int(k, positions))},
                       {b.constant_splat_int(k, TensorType::scalar(ElementType::kS64))}, {1},
                       [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.minimum(a[0], a[1])}; })[0];
  Value listed = b.compare(b.iota(positions, 1), b.broadcast_in_dim(end, {n, k}, {0}), "LT");
  auto [t, violated] = clamp_classes(b, raw, c, listed);
  // Entries after the terminator are not used, but CPU checks them too:
  // each must be -1 or a class.
  Value beyond = b.or_(b.compare(raw, b.constant_splat_int(-1, positions), "LT"),
                       b.compare(raw, b.constant_splat_int(c, positions), "GE"));
  violated = b.or_(violated, any_true(b, beyond));
  const std::vector<int64_t> nkc = {n, k, c};
  Value onehot = b.and_(b.compare(b.broadcast_in_dim(t, nkc, {0, 1}), b.iota(TensorType(ElementType::kS64, nkc), 2), "EQ"),
                        b.broadcast_in_dim(listed, nkc, {0, 1}));
  Value is_target = b.reduce({onehot}, {b.constant_splat_int(0, TensorType::scalar(ElementType::kPred))}, {1},
                             [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.or_(a[0], a[1])}; })[0];
  Value xt = at_classes(b, x, t);  // [N, K]
  Value z = b.add(b.subtract(b.constant_splat(1, TensorType(x.dtype(), nkc)), b.broadcast_in_dim(xt, nkc, {0, 1})),
                  b.broadcast_in_dim(x, nkc, {0, 2}));
  Value counted = b.and_(b.and_(b.broadcast_in_dim(listed, nkc, {0, 1}), b.not_(b.broadcast_in_dim(is_target, nkc, {0, 2}))),
                         b.compare(z, b.constant_splat(0, z.type()), "GT"));
  return {z, counted, onehot, is_target, violated};
}

}  // namespace

MarginLoss lower_multilabel_margin_loss(hlo::Builder& b, const Value& self, const Value& target,
                                        LossReduction reduction) {
  const int64_t n = self.dims()[0], c = self.dims()[1];
  Value x = convert_to(b, self, compute_type(self.dtype()));
  MultiLabel m = multilabel(b, x, target);
  Value per_sample = b.divide(sum_over(b, b.select(m.counted, m.z, b.constant_splat(0, m.z.type())), {1, 2}),
                              b.constant_splat(static_cast<double>(c), TensorType(x.dtype(), {n})));
  return {reduce_loss(b, per_sample, reduction, self.dtype()), b.convert(m.is_target, self.dtype()), m.violated};
}

Value lower_multilabel_margin_loss_backward(hlo::Builder& b, const Value& grad_output, const Value& self,
                                            const Value& target, LossReduction reduction) {
  const int64_t n = self.dims()[0], c = self.dims()[1], k = target.dims()[1];
  const ElementType acc = compute_type(self.dtype());
  Value x = convert_to(b, self, acc);
  MultiLabel m = multilabel(b, x, target);
  Value g = b.divide(per_sample_grad(b, grad_output, reduction, n, acc), b.constant_splat(static_cast<double>(c), TensorType(acc, {n})));
  const std::vector<int64_t> nkc = {n, k, c};
  Value active = b.select(m.counted, b.broadcast_in_dim(g, nkc, {0}), b.constant_splat(0, TensorType(acc, nkc)));
  // Each counted pair raises x[i]'s gradient and lowers its target's.
  Value up = sum_over(b, active, {1});                               // [N, C]
  Value per_target = sum_over(b, active, {2});                       // [N, K]
  Value down = sum_over(b, b.select(m.onehot, b.broadcast_in_dim(per_target, nkc, {0, 1}),
                                    b.constant_splat(0, TensorType(acc, nkc))), {1});
  return convert_to(b, b.subtract(up, down), self.dtype());
}

}  // namespace torch_tpu::ops
