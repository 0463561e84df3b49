#include "ops/elementwise/activation.h"

#include <cmath>

#include "ops/broadcast.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

constexpr double kSqrt1_2 = 0.70710678118654752440;    // 1 / sqrt(2)
constexpr double kInvSqrt2Pi = 0.39894228040143267794;  // 1 / sqrt(2 pi)
constexpr double kSqrt2OverPi = 0.79788456080286535588;  // sqrt(2 / pi)
constexpr double kKappa = 0.044715;

// A 0-dim scalar as a tensor like `like` (its dtype and shape).
hlo::Value fill(hlo::Builder& b, const hlo::Value& scalar, const hlo::Value& like) {
  return broadcast_to(b, convert_to(b, scalar, like.dtype()), like.dims());
}

// grad and x in the compute type of `out`, broadcast together.
std::pair<hlo::Value, hlo::Value> backward_operands(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                                    ElementType out, const char* op) {
  auto dims = broadcast_shapes(grad.dims(), x.dims(), op);
  const ElementType c = elementwise_compute_type(out);
  return {broadcast_to(b, convert_to(b, grad, c), dims), broadcast_to(b, convert_to(b, x, c), dims)};
}

}  // namespace

hlo::Value lower_relu(hlo::Builder& b, const hlo::Value& x) { return b.maximum(x, splat_like(b, 0, x)); }

hlo::Value lower_threshold(hlo::Builder& b, const hlo::Value& x, const hlo::Value& threshold,
                           const hlo::Value& value) {
  // Compared in the threshold's type (f32 for a 16-bit x, as CPU compares).
  hlo::Value below = b.compare(convert_to(b, x, threshold.dtype()), broadcast_to(b, threshold, x.dims()), "LE");
  return b.select(below, fill(b, value, x), x);
}

hlo::Value lower_threshold_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                    const hlo::Value& threshold, ElementType out) {
  auto dims = broadcast_shapes(grad.dims(), x.dims(), "aten::threshold_backward");
  hlo::Value g = broadcast_to(b, convert_to(b, grad, out), dims);
  hlo::Value v = broadcast_to(b, convert_to(b, x, out), dims);
  hlo::Value below = b.compare(convert_to(b, v, threshold.dtype()), broadcast_to(b, threshold, dims), "LE");
  return b.select(below, splat_like(b, 0, g), g);
}

hlo::Value lower_gelu(hlo::Builder& b, const hlo::Value& input, GeluApproximation approximate) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(input.dtype()));
  auto k = [&](double v) { return splat_like(b, v, x); };
  hlo::Value r;
  if (approximate == GeluApproximation::kTanh) {
    hlo::Value cube = b.multiply(b.multiply(x, x), x);
    hlo::Value inner = b.multiply(k(kSqrt2OverPi), b.add(x, b.multiply(k(kKappa), cube)));
    r = b.multiply(b.multiply(k(0.5), x), b.add(k(1), b.tanh(inner)));
  } else {
    hlo::Value cdf = b.add(k(1), erf(b, b.multiply(x, k(kSqrt1_2))));
    r = b.multiply(b.multiply(x, k(0.5)), cdf);
  }
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_gelu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                               GeluApproximation approximate, ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::gelu_backward");
  auto k = [&](double v) { return splat_like(b, v, x); };
  hlo::Value dx;
  if (approximate == GeluApproximation::kTanh) {
    hlo::Value x_sq = b.multiply(x, x);
    hlo::Value inner = b.multiply(k(kSqrt2OverPi), b.add(x, b.multiply(k(kKappa), b.multiply(x_sq, x))));
    hlo::Value t = b.tanh(inner);
    hlo::Value left = b.multiply(k(0.5), x);
    hlo::Value right = b.add(k(1), t);
    hlo::Value left_derivative = b.multiply(k(0.5), right);
    hlo::Value inner_derivative = b.multiply(k(kSqrt2OverPi), b.add(k(1), b.multiply(k(3 * kKappa), x_sq)));
    hlo::Value right_derivative = b.multiply(b.subtract(k(1), b.multiply(t, t)), inner_derivative);
    dx = b.add(left_derivative, b.multiply(left, right_derivative));
  } else {
    hlo::Value cdf = b.multiply(k(0.5), b.add(k(1), erf(b, b.multiply(x, k(kSqrt1_2)))));
    hlo::Value pdf = b.multiply(k(kInvSqrt2Pi), b.exponential(b.multiply(b.multiply(x, x), k(-0.5))));
    dx = b.add(cdf, b.multiply(x, pdf));
  }
  return convert_to(b, b.multiply(g, dx), out);
}

hlo::Value lower_silu(hlo::Builder& b, const hlo::Value& input) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(input.dtype()));
  hlo::Value r = b.divide(x, b.add(splat_like(b, 1, x), b.exponential(b.negate(x))));
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_silu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                               ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::silu_backward");
  hlo::Value one = splat_like(b, 1, x);
  hlo::Value s = b.divide(one, b.add(one, b.exponential(b.negate(x))));
  hlo::Value r = b.multiply(g, conjugate(b, b.multiply(s, b.add(one, b.multiply(x, b.subtract(one, s))))));
  return convert_to(b, r, out);
}

hlo::Value lower_sigmoid_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                                  ElementType out) {
  auto [g, y] = backward_operands(b, grad, output, out, "aten::sigmoid_backward");
  return convert_to(b, b.multiply(g, conjugate(b, b.multiply(b.subtract(splat_like(b, 1, y), y), y))), out);
}

hlo::Value lower_tanh_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& output,
                               ElementType out) {
  auto [g, y] = backward_operands(b, grad, output, out, "aten::tanh_backward");
  return convert_to(b, b.multiply(g, conjugate(b, b.subtract(splat_like(b, 1, y), b.multiply(y, y)))), out);
}

hlo::Value lower_leaky_relu(hlo::Builder& b, const hlo::Value& input, const hlo::Value& slope) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(input.dtype()));
  hlo::Value r = b.select(b.compare(x, splat_like(b, 0, x), "GT"), x, b.multiply(x, fill(b, slope, x)));
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_leaky_relu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                     const hlo::Value& slope, ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::leaky_relu_backward");
  hlo::Value r = b.select(b.compare(x, splat_like(b, 0, x), "GT"), g, b.multiply(g, fill(b, slope, g)));
  return convert_to(b, r, out);
}

hlo::Value lower_hardtanh_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                   const hlo::Value& lo, const hlo::Value& hi, ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::hardtanh_backward");
  hlo::Value outside = b.or_(b.compare(x, fill(b, lo, x), "LE"), b.compare(x, fill(b, hi, x), "GE"));
  return convert_to(b, b.select(outside, splat_like(b, 0, g), g), out);
}

hlo::Value lower_softplus(hlo::Builder& b, const hlo::Value& input, const hlo::Value& beta,
                          const hlo::Value& threshold) {
  const hlo::Value x = convert_to(b, input, elementwise_compute_type(input.dtype()));
  hlo::Value bt = fill(b, beta, x);
  hlo::Value xb = b.multiply(x, bt);
  hlo::Value soft = b.divide(b.log_plus_one(b.exponential(xb)), bt);
  hlo::Value r = b.select(b.compare(xb, fill(b, threshold, x), "GT"), x, soft);
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_softplus_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                   const hlo::Value& beta, const hlo::Value& threshold, ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::softplus_backward");
  hlo::Value xb = b.multiply(x, fill(b, beta, x));
  hlo::Value z = b.exponential(xb);
  hlo::Value soft = b.divide(b.multiply(g, z), b.add(z, splat_like(b, 1, z)));
  hlo::Value r = b.select(b.compare(xb, fill(b, threshold, x), "GT"), g, soft);
  return convert_to(b, r, out);
}

}  // namespace torch_tpu::ops
