// Lowerings of fused scaled dot product attention (the "overrideable" SDPA
// backend of PyTorch) and its gradient.
//
// q: [B, Hq, L, E], k: [B, Hkv, S, E], v: [B, Hkv, S, Ev], with Hq a
// multiple of Hkv (grouped-query attention: query head h reads key/value
// head h / (Hq / Hkv), as repeat_interleave would give). The optional bias
// broadcasts (right-aligned) to [B, Hq, L, S] and is added to the scaled
// scores; `causal` masks out key positions after the query's (top-left
// aligned, as torch.tril). Rows with every position masked give zeros, as
// PyTorch's math path does. Softmax runs in f32 for 16-bit inputs.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct AttentionOptions {
  double scale;  // multiplies q . k
  bool causal;
  // How f32 products multiply (torch.set_float32_matmul_precision;
  // ops/linalg/matmul.h).
  hlo::Precision f32_precision = hlo::Precision::kHighest;
};

struct AttentionOutputs {
  hlo::Value out;        // [B, Hq, L, Ev], q's dtype
  hlo::Value logsumexp;  // [B, Hq, L], f32 or f64 (-inf for fully masked rows)
};

AttentionOutputs lower_attention(hlo::Builder& b, const hlo::Value& q, const hlo::Value& k, const hlo::Value& v,
                                 const std::optional<hlo::Value>& bias, const AttentionOptions& options);

struct AttentionGrads {
  std::optional<hlo::Value> q, k, v, bias;  // each in its operand's shape and dtype
};

// Recomputes the attention weights from the forward's logsumexp; `out` is
// the forward's output.
AttentionGrads lower_attention_backward(hlo::Builder& b, const hlo::Value& grad_out, const hlo::Value& q,
                                        const hlo::Value& k, const hlo::Value& v,
                                        const std::optional<hlo::Value>& bias, const hlo::Value& logsumexp,
                                        const hlo::Value& out,
                                        const AttentionOptions& options, bool want_q, bool want_k, bool want_v,
                                        bool want_bias);

}  // namespace torch_tpu::ops
