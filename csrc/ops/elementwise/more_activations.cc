#include "ops/elementwise/more_activations.h"

#include <vector>

#include "ops/broadcast.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

hlo::Value k(hlo::Builder& b, double v, const hlo::Value& like) { return splat_like(b, v, like); }

// A 0-dim scalar as a tensor like `like`.
hlo::Value fill(hlo::Builder& b, const hlo::Value& scalar, const hlo::Value& like) {
  return broadcast_to(b, convert_to(b, scalar, like.dtype()), like.dims());
}

hlo::Value in_compute(hlo::Builder& b, const hlo::Value& x) {
  return convert_to(b, x, elementwise_compute_type(x.dtype()));
}

// grad and x in the compute type of `out`, broadcast together.
std::pair<hlo::Value, hlo::Value> backward_operands(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                                    ElementType out, const char* op) {
  auto dims = broadcast_shapes(grad.dims(), x.dims(), op);
  const ElementType c = elementwise_compute_type(out);
  return {broadcast_to(b, convert_to(b, grad, c), dims), broadcast_to(b, convert_to(b, x, c), dims)};
}

hlo::Value sigmoid(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value one = k(b, 1, x);
  return b.divide(one, b.add(one, b.exponential(b.negate(x))));
}

// The two halves of x along dim.
std::pair<hlo::Value, hlo::Value> halves(hlo::Builder& b, const hlo::Value& x, int64_t dim) {
  std::vector<int64_t> starts(x.dims().size(), 0), limits = x.dims(), strides(x.dims().size(), 1);
  const int64_t half = x.dims()[dim] / 2;
  limits[dim] = half;
  hlo::Value first = b.slice(x, starts, limits, strides);
  starts[dim] = half;
  limits[dim] = x.dims()[dim];
  return {first, b.slice(x, starts, limits, strides)};
}

}  // namespace

hlo::Value lower_elu(hlo::Builder& b, const hlo::Value& input, const hlo::Value& alpha, const hlo::Value& scale,
                     const hlo::Value& input_scale) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value s = fill(b, scale, x);
  hlo::Value negative = b.multiply(b.exponential_minus_one(b.multiply(x, fill(b, input_scale, x))),
                                   b.multiply(fill(b, alpha, x), s));
  // Zero takes the linear side, as on CPU: it keeps the zero's sign, and
  // alpha * expm1(0) would be NaN for an infinite alpha.
  hlo::Value r = b.select(b.compare(x, k(b, 0, x), "LT"), negative, b.multiply(x, s));
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_elu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& saved,
                              const hlo::Value& alpha, const hlo::Value& scale, const hlo::Value& input_scale,
                              bool is_result, ElementType out) {
  auto [g, v] = backward_operands(b, grad, saved, out, "aten::elu_backward");
  hlo::Value negcoef = b.multiply(fill(b, alpha, v), fill(b, scale, v));
  hlo::Value ipt = fill(b, input_scale, v);
  hlo::Value negative = is_result
                            ? b.multiply(b.multiply(g, ipt), b.add(v, negcoef))
                            : b.multiply(b.multiply(b.multiply(g, ipt), negcoef), b.exponential(b.multiply(v, ipt)));
  // A NaN input takes the linear side (its gradient passes), as in CUDA's
  // kernel and CPU's scalar one; CPU's vectorized loop gives NaN there.
  hlo::Value r = b.select(b.compare(v, k(b, 0, v), "LE"), negative, b.multiply(g, fill(b, scale, v)));
  return convert_to(b, r, out);
}

hlo::Value lower_hardswish(hlo::Builder& b, const hlo::Value& input) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value relu6 = b.minimum(b.maximum(b.add(x, k(b, 3, x)), k(b, 0, x)), k(b, 6, x));
  return convert_to(b, b.divide(b.multiply(x, relu6), k(b, 6, x)), input.dtype());
}

hlo::Value lower_hardswish_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                    ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::hardswish_backward");
  hlo::Value middle = b.multiply(g, b.add(b.divide(x, k(b, 3, x)), k(b, 0.5, x)));
  // CPU's and CUDA's open interval: the gradient at -3 is 0 and at 3 is grad.
  hlo::Value r = b.select(b.compare(x, k(b, 3, x), "LT"), middle, g);
  r = b.select(b.compare(x, k(b, -3, x), "LE"), k(b, 0, r), r);
  return convert_to(b, r, out);
}

hlo::Value lower_hardsigmoid(hlo::Builder& b, const hlo::Value& input) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value relu6 = b.minimum(b.maximum(b.add(x, k(b, 3, x)), k(b, 0, x)), k(b, 6, x));
  return convert_to(b, b.divide(relu6, k(b, 6, x)), input.dtype());
}

hlo::Value lower_hardsigmoid_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                      ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::hardsigmoid_backward");
  hlo::Value inside = b.and_(b.compare(x, k(b, -3, x), "GT"), b.compare(x, k(b, 3, x), "LT"));
  hlo::Value r = b.select(inside, b.multiply(g, k(b, 1.0 / 6.0, g)), k(b, 0, g));
  return convert_to(b, r, out);
}

hlo::Value lower_mish(hlo::Builder& b, const hlo::Value& input) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value r = b.multiply(x, b.tanh(b.log_plus_one(b.exponential(x))));
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_mish_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input, ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::mish_backward");
  // d/dx x tanh(softplus(x)) = tanh(sp) + x sigmoid(x) (1 - tanh(sp)^2), in
  // the compute type (f32 for 16-bit floats, as CPU's kernel).
  hlo::Value t = b.tanh(b.log_plus_one(b.exponential(x)));
  hlo::Value sigmoid = b.logistic(x);
  hlo::Value d = b.add(t, b.multiply(b.multiply(x, sigmoid), b.subtract(k(b, 1, t), b.multiply(t, t))));
  return convert_to(b, b.multiply(g, d), out);
}

std::pair<hlo::Value, hlo::Value> lower_log_sigmoid(hlo::Builder& b, const hlo::Value& input) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value z = b.exponential(b.negate(b.abs(x)));
  hlo::Value r = b.subtract(b.minimum(x, k(b, 0, x)), b.log_plus_one(z));
  return {convert_to(b, r, input.dtype()), convert_to(b, z, input.dtype())};
}

hlo::Value lower_log_sigmoid_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                      ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::log_sigmoid_backward");
  // d/dx = max_deriv - sign * z / (1 + z), z = exp(-|x|)
  hlo::Value negative = b.compare(x, k(b, 0, x), "LT");
  hlo::Value z = b.exponential(b.negate(b.abs(x)));
  hlo::Value frac = b.divide(z, b.add(k(b, 1, z), z));
  hlo::Value d = b.select(negative, b.subtract(k(b, 1, z), frac), frac);
  return convert_to(b, b.multiply(d, g), out);
}

hlo::Value lower_glu(hlo::Builder& b, const hlo::Value& input, int64_t dim) {
  auto [first, second] = halves(b, in_compute(b, input), dim);
  return convert_to(b, b.multiply(first, sigmoid(b, second)), input.dtype());
}

hlo::Value lower_glu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input, int64_t dim,
                              ElementType out) {
  const ElementType c = elementwise_compute_type(out);
  auto [first, second] = halves(b, convert_to(b, input, c), dim);
  hlo::Value g = convert_to(b, grad, c);
  hlo::Value s = sigmoid(b, second);
  hlo::Value d_first = b.multiply(s, g);
  hlo::Value d_second = b.multiply(b.multiply(b.multiply(first, s), b.subtract(k(b, 1, s), s)), g);
  return convert_to(b, b.concatenate({d_first, d_second}, dim), out);
}

hlo::Value lower_prelu(hlo::Builder& b, const hlo::Value& input, const hlo::Value& weight, ElementType out) {
  auto dims = broadcast_shapes(input.dims(), weight.dims(), "aten::_prelu_kernel");
  const ElementType c = elementwise_compute_type(out);
  hlo::Value x = broadcast_to(b, convert_to(b, input, c), dims);
  hlo::Value w = broadcast_to(b, convert_to(b, weight, c), dims);
  return convert_to(b, b.select(b.compare(x, k(b, 0, x), "GT"), x, b.multiply(w, x)), out);
}

std::pair<hlo::Value, hlo::Value> lower_prelu_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                                       const hlo::Value& weight, ElementType out) {
  auto dims = broadcast_shapes(broadcast_shapes(input.dims(), weight.dims(), "aten::_prelu_kernel_backward"),
                               grad.dims(), "aten::_prelu_kernel_backward");
  const ElementType c = elementwise_compute_type(out);
  hlo::Value x = broadcast_to(b, convert_to(b, input, c), dims);
  hlo::Value w = broadcast_to(b, convert_to(b, weight, c), dims);
  hlo::Value g = broadcast_to(b, convert_to(b, grad, c), dims);
  hlo::Value positive = b.compare(x, k(b, 0, x), "GT");
  hlo::Value dx = b.select(positive, g, b.multiply(w, g));
  hlo::Value dw = b.select(positive, k(b, 0, g), b.multiply(x, g));
  return {convert_to(b, dx, out), convert_to(b, dw, out)};
}

hlo::Value lower_softshrink(hlo::Builder& b, const hlo::Value& input, const hlo::Value& lambd) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value l = fill(b, lambd, x);
  hlo::Value r = b.select(b.compare(x, b.negate(l), "LT"), b.add(x, l), b.multiply(x, k(b, 0, x)));
  r = b.select(b.compare(x, l, "GT"), b.subtract(x, l), r);
  return convert_to(b, r, input.dtype());
}

hlo::Value lower_hardshrink(hlo::Builder& b, const hlo::Value& input, const hlo::Value& lambd) {
  const hlo::Value x = in_compute(b, input);
  hlo::Value l = fill(b, lambd, x);
  hlo::Value inside = b.and_(b.compare(x, b.negate(l), "GE"), b.compare(x, l, "LE"));
  return convert_to(b, b.select(inside, k(b, 0, x), x), input.dtype());
}

hlo::Value lower_shrink_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                 const hlo::Value& lambd, ElementType out) {
  auto [g, x] = backward_operands(b, grad, input, out, "aten::shrink_backward");
  hlo::Value l = fill(b, lambd, x);
  hlo::Value inside = b.and_(b.compare(x, b.negate(l), "GE"), b.compare(x, l, "LE"));
  return convert_to(b, b.select(inside, k(b, 0, g), g), out);
}

}  // namespace torch_tpu::ops
