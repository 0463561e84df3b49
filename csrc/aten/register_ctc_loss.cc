// ATen glue for the CTC loss: _ctc_loss and _ctc_loss_backward, with the
// lengths as int lists or as tensors (F.ctc_loss's composite reaches them
// and applies the reduction and zero_infinity to the losses). The lengths
// travel as device tensors, so new lengths never recompile; concatenated
// (1-d) targets are gathered into the padded [N, S] form first. Lowerings:
// csrc/ops/nn/ctc.cc.
#include <ATen/core/Tensor.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/index_select.h>
#include <ATen/ops/tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/nn/ctc.h"

namespace torch_tpu::aten {

namespace {

using at::IntArrayRef;
using at::Tensor;

// Targets [N, S] and the lengths as s64 device tensors.
struct CtcOperands {
  Tensor targets;
  Tensor input_lengths;
  Tensor target_lengths;
};

CtcOperands ctc_operands(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                         IntArrayRef target_lengths, int64_t blank) {
  TORCH_CHECK(log_probs.dim() == 3, "Expected 3-dimensional tensor, but got ", log_probs.dim(),
              "-dimensional tensor for argument #1 'log_probs' (while checking arguments for ctc_loss)");
  TORCH_CHECK_NOT_IMPLEMENTED(log_probs.scalar_type() == at::kFloat || log_probs.scalar_type() == at::kDouble,
                              "\"ctc_loss\" not implemented for '", c10::toString(log_probs.scalar_type()),
                              "' (float and double only, as on CPU)");
  TORCH_CHECK(targets.scalar_type() == at::kLong || targets.scalar_type() == at::kInt,
              "Expected tensor for argument #2 'targets' to have scalar type Long or Int; but got ",
              targets.scalar_type(), " instead (while checking arguments for ctc_loss)");
  TORCH_CHECK(log_probs.numel() > 0, "log_probs tensor must not be empty");
  const int64_t t_len = log_probs.size(0), n = log_probs.size(1), classes = log_probs.size(2);
  TORCH_CHECK(blank >= 0 && blank < classes, "blank must be in label range");
  TORCH_CHECK(static_cast<int64_t>(input_lengths.size()) == n, "input_lengths must be of size batch_size");
  TORCH_CHECK(static_cast<int64_t>(target_lengths.size()) == n, "target_lengths must be of size batch_size");
  for (int64_t l : input_lengths) {
    TORCH_CHECK(l >= 0, "Expected input_lengths to have value at least 0, but got value ", l,
                " (while checking arguments for ctc_loss)");
    TORCH_CHECK(l <= t_len, "Expected input_lengths to have value at most ", t_len, ", but got value ", l,
                " (while checking arguments for ctc_loss)");
  }
  for (int64_t l : target_lengths) TORCH_CHECK(l >= 0, "ctc_loss: target_lengths must not be negative, got ", l);
  const auto device = log_probs.device();
  auto to_device = [&](IntArrayRef v) { return at::tensor(v, at::TensorOptions().dtype(at::kLong)).to(device); };
  CtcOperands ops{targets, to_device(input_lengths), to_device(target_lengths)};
  if (targets.dim() == 2) {
    TORCH_CHECK(targets.size(0) == n, "ctc_loss: targets have batch size ", targets.size(0), " but log_probs ", n);
    for (int64_t l : target_lengths) {
      TORCH_CHECK(l <= targets.size(1), "Expected tensor to have size at least ", l,
                  " at dimension 1, but got size ", targets.size(1),
                  " for argument #2 'targets' (while checking arguments for ctc_loss)");
    }
    return ops;
  }
  TORCH_CHECK(targets.dim() == 1, "ctc_loss: targets must be 1-d (concatenated) or 2-d (padded), got ",
              targets.dim(), " dimensions");
  // Concatenated targets: sample b's labels start after the earlier ones.
  int64_t total = 0, longest = 0;
  for (int64_t l : target_lengths) {
    total += l;
    longest = std::max(longest, l);
  }
  TORCH_CHECK(total == targets.size(0), "Expected tensor to have size ", total,
              " at dimension 0, but got size ", targets.size(0),
              " for argument #2 'targets' (while checking arguments for ctc_loss)");
  if (longest == 0) {
    ops.targets = at::empty({n, 0}, targets.options());
    return ops;
  }
  std::vector<int64_t> index(n * longest, 0);
  int64_t start = 0;
  for (int64_t b = 0; b < n; ++b) {
    for (int64_t j = 0; j < longest; ++j) index[b * longest + j] = start + std::min(j, std::max<int64_t>(target_lengths[b] - 1, 0));
    start += target_lengths[b];
  }
  const int64_t last = std::max<int64_t>(targets.size(0) - 1, 0);
  for (int64_t& i : index) i = std::min(i, last);
  ops.targets = at::index_select(targets, 0, to_device(index)).view({n, longest});
  return ops;
}

std::tuple<Tensor, Tensor> ctc_loss(const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                                    IntArrayRef target_lengths, int64_t blank, bool /*zero_infinity*/) {
  CtcOperands o = ctc_operands(log_probs, targets, input_lengths, target_lengths, blank);
  OpCall call{"aten::_ctc_loss", std::to_string(blank), {log_probs, o.targets, o.input_lengths, o.target_lengths}, {}};
  auto r = run_op(call, [blank](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    ops::CtcLoss l = ops::lower_ctc_loss(b, t[0], t[1], t[2], t[3], blank);
    return std::vector<hlo::Value>{l.neg_log_likelihood, l.log_alpha, l.bad_label};
  });
  defer_check(r.at(2), CheckError::kIndex, "ctc_loss: a target label is outside [0, number of classes)");
  return {r[0], r[1]};
}

std::vector<int64_t> host_lengths(const Tensor& lengths, const char* name) {
  TORCH_CHECK(c10::isIntegralType(lengths.scalar_type(), /*includeBool=*/false), name, " must be integral");
  Tensor l = lengths.to(at::kCPU, at::kLong).contiguous();
  return {l.data_ptr<int64_t>(), l.data_ptr<int64_t>() + l.numel()};
}

std::tuple<Tensor, Tensor> ctc_loss_tensor(const Tensor& log_probs, const Tensor& targets, const Tensor& input_lengths,
                                           const Tensor& target_lengths, int64_t blank, bool zero_infinity) {
  return ctc_loss(log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                  host_lengths(target_lengths, "target_lengths"), blank, zero_infinity);
}

Tensor ctc_loss_backward(const Tensor& grad, const Tensor& log_probs, const Tensor& targets, IntArrayRef input_lengths,
                         IntArrayRef target_lengths, const Tensor& neg_log_likelihood, const Tensor& log_alpha,
                         int64_t blank, bool zero_infinity) {
  CtcOperands o = ctc_operands(log_probs, targets, input_lengths, target_lengths, blank);
  OpCall call{"aten::_ctc_loss_backward",
              std::to_string(blank) + (zero_infinity ? "z" : "-"),
              {grad, log_probs, o.targets, o.input_lengths, o.target_lengths, neg_log_likelihood, log_alpha},
              {}};
  return run_op(call, [blank, zero_infinity](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                             const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{
               ops::lower_ctc_loss_backward(b, t[0], t[1], t[2], t[3], t[4], t[5], t[6], blank, zero_infinity)};
         })
      .at(0);
}

Tensor ctc_loss_backward_tensor(const Tensor& grad, const Tensor& log_probs, const Tensor& targets,
                                const Tensor& input_lengths, const Tensor& target_lengths,
                                const Tensor& neg_log_likelihood, const Tensor& log_alpha, int64_t blank,
                                bool zero_infinity) {
  return ctc_loss_backward(grad, log_probs, targets, host_lengths(input_lengths, "input_lengths"),
                           host_lengths(target_lengths, "target_lengths"), neg_log_likelihood, log_alpha, blank,
                           zero_infinity);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_ctc_loss", ctc_loss);
  m.impl("_ctc_loss.Tensor", ctc_loss_tensor);
  m.impl("_ctc_loss_backward", ctc_loss_backward);
  m.impl("_ctc_loss_backward.Tensor", ctc_loss_backward_tensor);
}

}  // namespace torch_tpu::aten
