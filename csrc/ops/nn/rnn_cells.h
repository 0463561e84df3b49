// The fused recurrent cells nn.LSTM / nn.GRU (and LSTMCell / GRUCell) run
// on accelerators: ATen computes the gate matmuls and hands the gate
// pre-activations to _thnn_fused_lstm_cell / _thnn_fused_gru_cell, whose
// backward ops take back the workspace the forward saved. The workspace
// layout is this file's own (only these backward ops read it). 16-bit
// floats compute in f32 and round the results once.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// input_gates, hidden_gates [B, 4H] in the order input, forget, cell,
// output; cx [B, H]; optional biases [4H] added to the gates.
struct LstmCell {
  hlo::Value hy, cy;     // [B, H]
  hlo::Value workspace;  // [B, 4H]: the activated gates
};
LstmCell lower_lstm_cell(hlo::Builder& b, const hlo::Value& input_gates, const hlo::Value& hidden_gates,
                         const hlo::Value& cx, const std::optional<hlo::Value>& input_bias,
                         const std::optional<hlo::Value>& hidden_bias);

// Missing output gradients count as zeros. grad_bias is the gates'
// gradient summed over the batch (the same for both biases).
struct LstmCellGrads {
  hlo::Value gates;  // [B, 4H]: for input_gates and hidden_gates alike
  hlo::Value cx;     // [B, H]
  hlo::Value bias;   // [4H]
};
LstmCellGrads lower_lstm_cell_backward(hlo::Builder& b, const std::optional<hlo::Value>& grad_hy,
                                       const std::optional<hlo::Value>& grad_cy, const hlo::Value& cx,
                                       const hlo::Value& cy, const hlo::Value& workspace);

// input_gates, hidden_gates [B, 3H] in the order reset, update, new; hx
// [B, H]; optional biases [3H].
struct GruCell {
  hlo::Value hy;         // [B, H]
  hlo::Value workspace;  // [B, 5H]: reset, update, new gates, hidden's new part, hx
};
GruCell lower_gru_cell(hlo::Builder& b, const hlo::Value& input_gates, const hlo::Value& hidden_gates,
                       const hlo::Value& hx, const std::optional<hlo::Value>& input_bias,
                       const std::optional<hlo::Value>& hidden_bias);

struct GruCellGrads {
  hlo::Value input_gates, hidden_gates;  // [B, 3H]
  hlo::Value hx;                         // [B, H]
  hlo::Value input_bias, hidden_bias;    // [3H]
};
GruCellGrads lower_gru_cell_backward(hlo::Builder& b, const hlo::Value& grad_hy, const hlo::Value& workspace);

}  // namespace torch_tpu::ops
