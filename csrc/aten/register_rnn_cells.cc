// ATen glue for the fused LSTM / GRU cells (_thnn_fused_lstm_cell,
// _thnn_fused_gru_cell) and their backward ops, through which nn.LSTM,
// nn.GRU, LSTMCell and GRUCell run on an accelerator: ATen does the gate
// matmuls, these ops the gates' elementwise part. Lowerings:
// csrc/ops/nn/rnn_cells.cc.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/nn/rnn_cells.h"

namespace torch_tpu::aten {

namespace {

using at::Tensor;
using Values = std::vector<hlo::Value>;

const Tensor* defined(const std::optional<Tensor>& t) { return t && t->defined() ? &*t : nullptr; }

// Gates [B, gates * H], state [B, H], biases [gates * H], one float dtype.
void check_cell(const char* op, int64_t gates, const Tensor& input_gates, const Tensor& hidden_gates,
                const Tensor& state, const Tensor* input_bias, const Tensor* hidden_bias) {
  TORCH_CHECK(state.dim() == 2 && input_gates.dim() == 2, op, ": expected 2-d gates and state, got gates of size ",
              input_gates.sizes(), " and state of size ", state.sizes());
  const int64_t batch = state.size(0), hidden = state.size(1);
  const std::vector<int64_t> gate_sizes = {batch, gates * hidden};
  TORCH_CHECK(input_gates.sizes() == at::IntArrayRef(gate_sizes) && hidden_gates.sizes() == input_gates.sizes(), op,
              ": expected input_gates and hidden_gates of size ", at::IntArrayRef(gate_sizes), " for a state of size ",
              state.sizes(), ", got ", input_gates.sizes(), " and ", hidden_gates.sizes());
  for (const Tensor* bias : {input_bias, hidden_bias}) {
    if (bias == nullptr) continue;
    TORCH_CHECK(bias->dim() == 1 && bias->size(0) == gates * hidden, op, ": expected biases of size [",
                gates * hidden, "], got ", bias->sizes());
  }
  const c10::ScalarType t = state.scalar_type();
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(t), op, ": not implemented for '", c10::toString(t), "'");
  for (const Tensor* other : {&input_gates, &hidden_gates, input_bias, hidden_bias}) {
    TORCH_CHECK(other == nullptr || other->scalar_type() == t, op, ": expected every tensor of dtype ", t,
                ", got ", other->scalar_type());
  }
  to_element_type(t, op);
}

std::string bias_key(const Tensor* input_bias, const Tensor* hidden_bias) {
  return {input_bias ? 'i' : '-', hidden_bias ? 'h' : '-'};
}

using CellLowering = std::function<Values(hlo::Builder&, const hlo::Value& input_gates, const hlo::Value& hidden_gates,
                                          const hlo::Value& state, const std::optional<hlo::Value>& input_bias,
                                          const std::optional<hlo::Value>& hidden_bias)>;

// A cell's forward over (input_gates, hidden_gates, state[, input_bias][,
// hidden_bias]): the missing biases are left out of the program.
std::vector<Tensor> run_cell(const char* aten_name, const char* op, int64_t gates, const Tensor& input_gates, const Tensor& hidden_gates,
                             const Tensor& state, const std::optional<Tensor>& input_bias_in,
                             const std::optional<Tensor>& hidden_bias_in, CellLowering lower) {
  const Tensor* input_bias = defined(input_bias_in);
  const Tensor* hidden_bias = defined(hidden_bias_in);
  check_cell(op, gates, input_gates, hidden_gates, state, input_bias, hidden_bias);
  std::vector<TensorArg> inputs = {input_gates, hidden_gates, state};
  if (input_bias) inputs.emplace_back(*input_bias);
  if (hidden_bias) inputs.emplace_back(*hidden_bias);
  const bool has_input_bias = input_bias != nullptr, has_hidden_bias = hidden_bias != nullptr;
  OpCall call{aten_name, bias_key(input_bias, hidden_bias), std::move(inputs), {}};
  return run_op(call, [&](hlo::Builder& b, const Values& t, const Values&) {
    size_t next = 3;
    std::optional<hlo::Value> ib, hb;
    if (has_input_bias) ib = t[next++];
    if (has_hidden_bias) hb = t[next++];
    return lower(b, t[0], t[1], t[2], ib, hb);
  });
}

std::tuple<Tensor, Tensor, Tensor> lstm_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& cx,
                                             const std::optional<Tensor>& input_bias,
                                             const std::optional<Tensor>& hidden_bias) {
  auto r = run_cell("aten::_thnn_fused_lstm_cell", "_thnn_fused_lstm_cell", 4, input_gates, hidden_gates, cx,
                    input_bias, hidden_bias,
                    [](hlo::Builder& b, const hlo::Value& ig, const hlo::Value& hg, const hlo::Value& c,
                       const std::optional<hlo::Value>& ib, const std::optional<hlo::Value>& hb) {
                      ops::LstmCell cell = ops::lower_lstm_cell(b, ig, hg, c, ib, hb);
                      return Values{cell.hy, cell.cy, cell.workspace};
                    });
  return {r.at(0), r.at(1), r.at(2)};
}

std::tuple<Tensor, Tensor, Tensor> lstm_cell_backward(const std::optional<Tensor>& grad_hy_in,
                                                      const std::optional<Tensor>& grad_cy_in, const Tensor& cx,
                                                      const Tensor& cy, const Tensor& workspace, bool has_bias) {
  const Tensor* grad_hy = defined(grad_hy_in);
  const Tensor* grad_cy = defined(grad_cy_in);
  if (grad_hy == nullptr && grad_cy == nullptr) return {Tensor(), Tensor(), Tensor()};
  const char* op = "_thnn_fused_lstm_cell_backward_impl";
  TORCH_CHECK(cy.sizes() == cx.sizes() && workspace.dim() == 2 && workspace.size(0) == cx.size(0) &&
                  workspace.size(1) == 4 * cx.size(1),
              op, ": expected cx and cy of one size [B, H] and a workspace of size [B, 4 * H], got ", cx.sizes(), ", ",
              cy.sizes(), " and ", workspace.sizes());
  for (const Tensor* g : {grad_hy, grad_cy}) {
    TORCH_CHECK(g == nullptr || (g->sizes() == cx.sizes() && g->scalar_type() == cx.scalar_type()), op,
                ": expected output gradients of size ", cx.sizes(), " and dtype ", cx.scalar_type());
  }
  std::vector<TensorArg> inputs = {cx, cy, workspace};
  if (grad_hy) inputs.emplace_back(*grad_hy);
  if (grad_cy) inputs.emplace_back(*grad_cy);
  const bool has_hy = grad_hy != nullptr, has_cy = grad_cy != nullptr;
  OpCall call{"aten::_thnn_fused_lstm_cell_backward_impl", bias_key(grad_hy, grad_cy), std::move(inputs), {}};
  auto r = run_op(call, [=](hlo::Builder& b, const Values& t, const Values&) {
    size_t next = 3;
    std::optional<hlo::Value> ghy, gcy;
    if (has_hy) ghy = t[next++];
    if (has_cy) gcy = t[next++];
    ops::LstmCellGrads g = ops::lower_lstm_cell_backward(b, ghy, gcy, t[0], t[1], t[2]);
    return Values{g.gates, g.cx, g.bias};
  });
  return {r.at(0), r.at(1), has_bias ? r.at(2) : Tensor()};
}

std::tuple<Tensor, Tensor> gru_cell(const Tensor& input_gates, const Tensor& hidden_gates, const Tensor& hx,
                                    const std::optional<Tensor>& input_bias,
                                    const std::optional<Tensor>& hidden_bias) {
  auto r = run_cell("aten::_thnn_fused_gru_cell", "_thnn_fused_gru_cell", 3, input_gates, hidden_gates, hx,
                    input_bias, hidden_bias,
                    [](hlo::Builder& b, const hlo::Value& ig, const hlo::Value& hg, const hlo::Value& h,
                       const std::optional<hlo::Value>& ib, const std::optional<hlo::Value>& hb) {
                      ops::GruCell cell = ops::lower_gru_cell(b, ig, hg, h, ib, hb);
                      return Values{cell.hy, cell.workspace};
                    });
  return {r.at(0), r.at(1)};
}

std::tuple<Tensor, Tensor, Tensor, Tensor, Tensor> gru_cell_backward(const Tensor& grad_hy, const Tensor& workspace,
                                                                     bool has_bias) {
  TORCH_CHECK(grad_hy.dim() == 2 && workspace.dim() == 2 && workspace.size(0) == grad_hy.size(0) &&
                  workspace.size(1) == 5 * grad_hy.size(1) && workspace.scalar_type() == grad_hy.scalar_type(),
              "_thnn_fused_gru_cell_backward: expected grad_hy of size [B, H] and a workspace of size [B, 5 * H] "
              "and the same dtype, got ", grad_hy.sizes(), " and ", workspace.sizes());
  to_element_type(grad_hy.scalar_type(), "_thnn_fused_gru_cell_backward");
  OpCall call{"aten::_thnn_fused_gru_cell_backward", "", {grad_hy, workspace}, {}};
  auto r = run_op(call, [](hlo::Builder& b, const Values& t, const Values&) {
    ops::GruCellGrads g = ops::lower_gru_cell_backward(b, t[0], t[1]);
    return Values{g.input_gates, g.hidden_gates, g.hx, g.input_bias, g.hidden_bias};
  });
  if (!has_bias) return {r.at(0), r.at(1), r.at(2), Tensor(), Tensor()};
  return {r.at(0), r.at(1), r.at(2), r.at(3), r.at(4)};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_thnn_fused_lstm_cell", lstm_cell);
  m.impl("_thnn_fused_lstm_cell_backward_impl", lstm_cell_backward);
  m.impl("_thnn_fused_gru_cell", gru_cell);
  m.impl("_thnn_fused_gru_cell_backward", gru_cell_backward);
}

}  // namespace torch_tpu::aten
