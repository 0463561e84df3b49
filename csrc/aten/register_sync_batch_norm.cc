// The batch-norm pieces nn.SyncBatchNorm calls between its collectives:
// local statistics, their combination across ranks, the elementwise
// normalization and the two halves of its backward. PyTorch implements
// them for CUDA only; here they are composites of reductions and
// elementwise ops (one fused program each in fused eager). Statistics are
// kept in the accumulation type (f32 for f16 / bf16 inputs), as on CUDA.
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <tuple>
#include <vector>

namespace torch_tpu::aten {

namespace {

using at::Tensor;

c10::ScalarType stat_type(const Tensor& input) {
  return input.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
}

// Every dimension but the channels' (1).
std::vector<int64_t> reduced_dims(const Tensor& input) {
  std::vector<int64_t> dims{0};
  for (int64_t d = 2; d < input.dim(); ++d) dims.push_back(d);
  return dims;
}

// A per-channel vector [C] shaped to broadcast against the input [N, C, ...].
Tensor per_channel(const Tensor& v, const Tensor& input) {
  std::vector<int64_t> shape(input.dim(), 1);
  shape[1] = input.size(1);
  return v.view(shape);
}

void check_input(const char* op, const Tensor& input) {
  TORCH_CHECK(input.dim() >= 2, op, ": expected an input with at least 2 dimensions (N, C, ...), got ",
              input.sizes());
}

std::tuple<Tensor, Tensor> batch_norm_stats(const Tensor& input, double eps) {
  check_input("aten::batch_norm_stats", input);
  TORCH_CHECK(input.numel() > 0, "aten::batch_norm_stats: the input is empty");
  Tensor x = input.to(stat_type(input));
  const auto dims = reduced_dims(input);
  Tensor mean = x.mean(dims);
  Tensor var = x.sub(per_channel(mean, input)).square().mean(dims);  // biased
  return {mean, var.add(eps).rsqrt()};
}

// Merges per-rank (mean, invstd, count) into the global statistics and
// updates the running ones (momentum, unbiased variance), as CUDA's kernel.
std::tuple<Tensor, Tensor> batch_norm_gather_stats_with_counts(const Tensor& input, const Tensor& mean,
                                                               const Tensor& invstd,
                                                               const std::optional<Tensor>& running_mean,
                                                               const std::optional<Tensor>& running_var,
                                                               double momentum, double eps, const Tensor& counts) {
  const char* op = "aten::batch_norm_gather_stats_with_counts";
  TORCH_CHECK(mean.dim() == 2 && invstd.sizes() == mean.sizes() && counts.numel() == mean.size(0), op,
              ": expected mean and invstd of shape [world, C] and counts of [world], got ", mean.sizes(), ", ",
              invstd.sizes(), " and ", counts.sizes());
  const auto type = mean.scalar_type();
  Tensor n = counts.to(type).view({-1, 1});
  Tensor total = n.sum();
  Tensor global_mean = mean.mul(n).sum(0).div(total);
  Tensor m2 = invstd.square().reciprocal().sub(eps).add(mean.sub(global_mean).square()).mul(n).sum(0);
  Tensor var = m2.div(total);
  Tensor global_invstd = var.add(eps).rsqrt();
  if (running_mean && running_mean->defined()) {
    running_mean->mul_(1 - momentum).add_(global_mean.to(running_mean->scalar_type()), momentum);
  }
  if (running_var && running_var->defined()) {
    Tensor unbiased = m2.div(total.sub(1));
    running_var->mul_(1 - momentum).add_(unbiased.to(running_var->scalar_type()), momentum);
  }
  return {global_mean, global_invstd};
}

Tensor batch_norm_elemt(const Tensor& input, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                        const Tensor& mean, const Tensor& invstd, double eps) {
  check_input("aten::batch_norm_elemt", input);
  Tensor out = input.to(mean.scalar_type()).sub(per_channel(mean, input)).mul(per_channel(invstd, input));
  if (weight && weight->defined()) out = out.mul(per_channel(weight->to(out.scalar_type()), input));
  if (bias && bias->defined()) out = out.add(per_channel(bias->to(out.scalar_type()), input));
  return out.to(input.scalar_type());
}

std::tuple<Tensor, Tensor, Tensor, Tensor> batch_norm_backward_reduce(const Tensor& grad_out, const Tensor& input,
                                                                      const Tensor& mean, const Tensor& invstd,
                                                                      const std::optional<Tensor>& weight,
                                                                      bool input_g, bool weight_g, bool bias_g) {
  check_input("aten::batch_norm_backward_reduce", input);
  const auto type = mean.scalar_type();
  const auto dims = reduced_dims(input);
  Tensor dy = grad_out.to(type);
  Tensor sum_dy = dy.sum(dims);
  Tensor sum_dy_xmu = dy.mul(input.to(type).sub(per_channel(mean, input))).sum(dims);
  const bool has_weight = weight && weight->defined();
  Tensor grad_weight, grad_bias;
  if (weight_g && has_weight) grad_weight = sum_dy_xmu.mul(invstd).to(weight->scalar_type());
  if (bias_g && has_weight) grad_bias = sum_dy.to(weight->scalar_type());
  if (!input_g) return {Tensor(), Tensor(), grad_weight, grad_bias};
  return {sum_dy, sum_dy_xmu, grad_weight, grad_bias};
}

Tensor batch_norm_backward_elemt(const Tensor& grad_out, const Tensor& input, const Tensor& mean,
                                 const Tensor& invstd, const std::optional<Tensor>& weight, const Tensor& sum_dy,
                                 const Tensor& sum_dy_xmu, const Tensor& count) {
  check_input("aten::batch_norm_backward_elemt", input);
  const auto type = mean.scalar_type();
  Tensor total = count.to(type).sum();
  Tensor mean_dy = sum_dy.div(total);
  Tensor mean_dy_xmu = sum_dy_xmu.div(total);
  Tensor xmu = input.to(type).sub(per_channel(mean, input));
  Tensor scale = invstd;
  if (weight && weight->defined()) scale = scale.mul(weight->to(type));
  Tensor grad = grad_out.to(type)
                    .sub(per_channel(mean_dy, input))
                    .sub(xmu.mul(per_channel(invstd.square().mul(mean_dy_xmu), input)))
                    .mul(per_channel(scale, input));
  return grad.to(input.scalar_type());
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("batch_norm_stats", batch_norm_stats);
  m.impl("batch_norm_gather_stats_with_counts", batch_norm_gather_stats_with_counts);
  m.impl("batch_norm_elemt", batch_norm_elemt);
  m.impl("batch_norm_backward_reduce", batch_norm_backward_reduce);
  m.impl("batch_norm_backward_elemt", batch_norm_backward_elemt);
}

}  // namespace torch_tpu::aten
