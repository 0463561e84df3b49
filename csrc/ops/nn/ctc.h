// Connectionist temporal classification loss (F.ctc_loss): the forward
// (alpha) recursion over time as an HLO while loop, and its gradient from
// the backward (beta) recursion, in the formulas of PyTorch's CPU kernel.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct CtcLoss {
  hlo::Value neg_log_likelihood;  // [N]: inf where no alignment exists
  hlo::Value log_alpha;           // [N, T, 2 S + 1]: -inf beyond each input length
  hlo::Value bad_label;           // 0-dim i1: a target label (within its length) outside [0, C)
};

// log_probs [T, N, C]; targets [N, S] (labels beyond each target length
// are ignored); input_lengths and target_lengths s64 [N], checked against
// T and S by the caller.
CtcLoss lower_ctc_loss(hlo::Builder& b, const hlo::Value& log_probs, const hlo::Value& targets,
                       const hlo::Value& input_lengths, const hlo::Value& target_lengths, int64_t blank);

// d(sum_n grad[n] * nll[n]) / d log_probs, [T, N, C]; zero past each input
// length, and for infinite losses when `zero_infinity` (else NaN, as CPU).
hlo::Value lower_ctc_loss_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& log_probs,
                                   const hlo::Value& targets, const hlo::Value& input_lengths,
                                   const hlo::Value& target_lengths, const hlo::Value& neg_log_likelihood,
                                   const hlo::Value& log_alpha, int64_t blank, bool zero_infinity);

}  // namespace torch_tpu::ops
