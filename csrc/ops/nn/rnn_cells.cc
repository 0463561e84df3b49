#include "ops/nn/rnn_cells.h"

#include <vector>

#include "ops/broadcast.h"
#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

namespace {

using hlo::Value;

// Gate k of `count` along dim 1 ([B, count * H] -> [B, H]).
Value chunk(hlo::Builder& b, const Value& x, int64_t k, int64_t count) {
  const int64_t batch = x.dims()[0], h = x.dims()[1] / count;
  return b.slice(x, {0, k * h}, {batch, (k + 1) * h}, {1, 1});
}

Value with_bias(hlo::Builder& b, const Value& gates, const std::optional<Value>& bias, ElementType t) {
  Value g = convert_to(b, gates, t);
  if (!bias) return g;
  return b.add(g, b.broadcast_in_dim(convert_to(b, *bias, t), g.dims(), {1}));
}

Value fill(hlo::Builder& b, double v, const Value& like) { return b.constant_splat(v, like.type()); }

// 1 - x * x, the derivative of tanh at its value x.
Value tanh_slope(hlo::Builder& b, const Value& x) { return b.subtract(fill(b, 1, x), b.multiply(x, x)); }
// x (1 - x), the derivative of the logistic function at its value x.
Value sigmoid_slope(hlo::Builder& b, const Value& x) { return b.multiply(x, b.subtract(fill(b, 1, x), x)); }

Value batch_sum(hlo::Builder& b, const Value& x) {
  return b.reduce({x}, {b.constant_splat(0, hlo::TensorType::scalar(x.dtype()))}, {0}, axis::add).at(0);
}

}  // namespace

LstmCell lower_lstm_cell(hlo::Builder& b, const Value& input_gates, const Value& hidden_gates, const Value& cx,
                         const std::optional<Value>& input_bias, const std::optional<Value>& hidden_bias) {
  const ElementType out = cx.dtype(), t = accumulation_type(out);
  Value gates = b.add(with_bias(b, input_gates, input_bias, t), with_bias(b, hidden_gates, hidden_bias, t));
  Value i = b.logistic(chunk(b, gates, 0, 4)), f = b.logistic(chunk(b, gates, 1, 4));
  Value g = b.tanh(chunk(b, gates, 2, 4)), o = b.logistic(chunk(b, gates, 3, 4));
  Value cy = b.add(b.multiply(f, convert_to(b, cx, t)), b.multiply(i, g));
  Value hy = b.multiply(o, b.tanh(cy));
  return {convert_to(b, hy, out), convert_to(b, cy, out), convert_to(b, b.concatenate({i, f, g, o}, 1), out)};
}

LstmCellGrads lower_lstm_cell_backward(hlo::Builder& b, const std::optional<Value>& grad_hy,
                                       const std::optional<Value>& grad_cy, const Value& cx, const Value& cy,
                                       const Value& workspace) {
  const ElementType out = cx.dtype(), t = accumulation_type(out);
  Value ws = convert_to(b, workspace, t), c = convert_to(b, cy, t), prev = convert_to(b, cx, t);
  Value i = chunk(b, ws, 0, 4), f = chunk(b, ws, 1, 4), g = chunk(b, ws, 2, 4), o = chunk(b, ws, 3, 4);
  Value zeros = fill(b, 0, c);
  Value ghy = grad_hy ? convert_to(b, *grad_hy, t) : zeros;
  Value gcy = grad_cy ? convert_to(b, *grad_cy, t) : zeros;
  Value tanh_c = b.tanh(c);
  // The cell state's whole gradient: its own plus the one through hy.
  Value gc = b.add(gcy, b.multiply(b.multiply(ghy, o), tanh_slope(b, tanh_c)));
  Value gi = b.multiply(b.multiply(gc, g), sigmoid_slope(b, i));
  Value gf = b.multiply(b.multiply(gc, prev), sigmoid_slope(b, f));
  Value gg = b.multiply(b.multiply(gc, i), tanh_slope(b, g));
  Value go = b.multiply(b.multiply(ghy, tanh_c), sigmoid_slope(b, o));
  Value gates = b.concatenate({gi, gf, gg, go}, 1);
  return {convert_to(b, gates, out), convert_to(b, b.multiply(gc, f), out), convert_to(b, batch_sum(b, gates), out)};
}

GruCell lower_gru_cell(hlo::Builder& b, const Value& input_gates, const Value& hidden_gates, const Value& hx,
                       const std::optional<Value>& input_bias, const std::optional<Value>& hidden_bias) {
  const ElementType out = hx.dtype(), t = accumulation_type(out);
  Value in = with_bias(b, input_gates, input_bias, t), hid = with_bias(b, hidden_gates, hidden_bias, t);
  Value h = convert_to(b, hx, t);
  Value r = b.logistic(b.add(chunk(b, in, 0, 3), chunk(b, hid, 0, 3)));
  Value z = b.logistic(b.add(chunk(b, in, 1, 3), chunk(b, hid, 1, 3)));
  Value hidden_new = chunk(b, hid, 2, 3);
  Value n = b.tanh(b.add(chunk(b, in, 2, 3), b.multiply(r, hidden_new)));
  // hy = (1 - z) n + z hx, written as n + z (hx - n).
  Value hy = b.add(n, b.multiply(z, b.subtract(h, n)));
  return {convert_to(b, hy, out), convert_to(b, b.concatenate({r, z, n, hidden_new, h}, 1), out)};
}

GruCellGrads lower_gru_cell_backward(hlo::Builder& b, const Value& grad_hy, const Value& workspace) {
  const ElementType out = grad_hy.dtype(), t = accumulation_type(out);
  Value ws = convert_to(b, workspace, t), go = convert_to(b, grad_hy, t);
  Value r = chunk(b, ws, 0, 5), z = chunk(b, ws, 1, 5), n = chunk(b, ws, 2, 5);
  Value hidden_new = chunk(b, ws, 3, 5), h = chunk(b, ws, 4, 5);
  Value gz = b.multiply(b.multiply(go, b.subtract(h, n)), sigmoid_slope(b, z));
  Value gh = b.multiply(go, z);
  Value gn = b.multiply(b.multiply(go, b.subtract(fill(b, 1, z), z)), tanh_slope(b, n));
  Value gr = b.multiply(b.multiply(gn, hidden_new), sigmoid_slope(b, r));
  Value input_gates = b.concatenate({gr, gz, gn}, 1);
  Value hidden_gates = b.concatenate({gr, gz, b.multiply(gn, r)}, 1);
  return {convert_to(b, input_gates, out), convert_to(b, hidden_gates, out), convert_to(b, gh, out),
          convert_to(b, batch_sum(b, input_gates), out), convert_to(b, batch_sum(b, hidden_gates), out)};
}

}  // namespace torch_tpu::ops
