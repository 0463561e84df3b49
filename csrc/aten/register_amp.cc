// Automatic mixed precision on tpu.
//
// torch.autocast("tpu", dtype=torch.bfloat16 or torch.float16): PyTorch
// registers no AutocastPrivateUse1 kernels itself, so this file does, with
// the op lists PyTorch shares between backends (the policy CUDA uses):
// matmuls, convolutions, linear and attention run in the lower precision;
// exp / log / pow, norms, softmax, sums and the losses run in f32; ops with
// several float inputs (addcmul, addcdiv, dot, ...) promote to the widest.
// Every other op falls through unchanged.
//
// GradScaler("tpu"): _amp_foreach_non_finite_check_and_unscale_ and
// _amp_update_scale_ are single device programs (csrc/ops/optim/amp.cc), so
// scaling never waits for the host.
//
// ATen/autocast_mode.h (which pulls in the full ATen headers) is included
// here only: its cast wrappers and shared op lists are the policy itself.
#include <ATen/autocast_mode.h>
#include <ATen/core/Tensor.h>
#include <torch/library.h>

#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/optim/amp.h"

namespace torch_tpu::aten {

namespace {

void check_one_float(const at::Tensor& t, const char* what) {
  TORCH_CHECK(t.numel() == 1, what, " must be a 1-element tensor.");
  TORCH_CHECK(t.scalar_type() == at::ScalarType::Float, what, " must be a float tensor.");
}

void non_finite_check_and_unscale_(at::TensorList grads, at::Tensor& found_inf, const at::Tensor& inv_scale) {
  if (grads.empty()) return;
  check_one_float(inv_scale, "inv_scale");
  check_one_float(found_inf, "found_inf");
  TORCH_CHECK(inv_scale.device() == found_inf.device(), "inv_scale and found_inf must be on the same device.");
  OpCall call{"aten::_amp_foreach_non_finite_check_and_unscale_", "", {}, {}};
  std::vector<at::Tensor> dsts;
  for (const at::Tensor& g : grads) {
    TORCH_CHECK(g.defined() && g.device() == found_inf.device(),
                "Expected all tensors to be on the same device (scaled gradients, found_inf, inv_scale)");
    TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(g.scalar_type()),
                                "\"_amp_foreach_non_finite_check_and_unscale_\" not implemented for '",
                                g.scalar_type(), "'");
    call.tensors.push_back(g);
    dsts.push_back(g);
  }
  const size_t n = grads.size();
  call.tensors.push_back(found_inf.dim() == 0 ? found_inf : found_inf.reshape({}));
  call.tensors.push_back(inv_scale.dim() == 0 ? inv_scale : inv_scale.reshape({}));
  // found_inf is written through its own (possibly 1-element) view.
  dsts.push_back(found_inf);
  const auto found_dims = found_inf.sizes().vec();
  run_op_into(call, [n, found_dims](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    std::vector<hlo::Value> gs(t.begin(), t.begin() + static_cast<std::ptrdiff_t>(n));
    auto out = ops::lower_unscale_and_check(b, gs, t[n], t[n + 1]);
    out.back() = b.reshape(out.back(), found_dims);
    return out;
  }, dsts);
}

at::Tensor& update_scale_(at::Tensor& self, at::Tensor& growth_tracker, const at::Tensor& found_inf,
                          double growth_factor, double backoff_factor, int64_t growth_interval) {
  TORCH_CHECK(growth_tracker.numel() == 1, "growth_tracker must be a 1-element tensor.");
  TORCH_CHECK(growth_tracker.scalar_type() == at::ScalarType::Int, "growth_tracker must be an int tensor.");
  check_one_float(self, "current_scale");
  check_one_float(found_inf, "found_inf");
  TORCH_CHECK(self.device() == growth_tracker.device() && self.device() == found_inf.device(),
              "current_scale, growth_tracker and found_inf must be on the same device.");
  OpCall call{"aten::_amp_update_scale_", "", {self.reshape({}), growth_tracker.reshape({}), found_inf.reshape({})},
              {{ElementType::kF32, growth_factor}, {ElementType::kF32, backoff_factor},
               {ElementType::kS32, growth_interval}}};
  const auto scale_dims = self.sizes().vec();
  const auto tracker_dims = growth_tracker.sizes().vec();
  run_op_into(call, [scale_dims, tracker_dims](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                               const std::vector<hlo::Value>& s) {
    auto [scale, tracker] = ops::lower_update_scale(b, t[0], t[1], t[2], s[0], s[1], s[2]);
    return std::vector<hlo::Value>{b.reshape(scale, scale_dims), b.reshape(tracker, tracker_dims)};
  }, std::vector<at::Tensor>{self, growth_tracker});
  return self;
}

// binary_cross_entropy takes probabilities, which a lower precision loses
// near 0 and 1: refused under autocast, as on CUDA.
at::Tensor binary_cross_entropy_refused(const at::Tensor&, const at::Tensor&, const std::optional<at::Tensor>&,
                                        int64_t) {
  TORCH_CHECK(false,
              "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast: a sigmoid "
              "followed by binary_cross_entropy loses precision in the lower dtype. Use "
              "torch.nn.functional.binary_cross_entropy_with_logits or torch.nn.BCEWithLogitsLoss, which "
              "combine the two and are safe to autocast.");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_amp_foreach_non_finite_check_and_unscale_", non_finite_check_and_unscale_);
  m.impl("_amp_update_scale_", update_scale_);
}

// Ops outside the lists run as they are.
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }

// The shared op lists name ATen types unqualified.
namespace autocast_lists {
using at::IntArrayRef;
using at::Scalar;
using at::ScalarType;
using at::Tensor;
#if __has_include(<ATen/core/Dimname.h>)
// Named dimensions, which PyTorch 2.13 dropped, still appear in 2.11's lists.
using at::DimnameList;
#endif

TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
#define TPU_AUTOCAST_LOWER(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, lower_precision_fp)
#define TPU_AUTOCAST_FP32(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32)
#define TPU_AUTOCAST_FP32_DTYPE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, fp32_set_opt_dtype)
#define TPU_AUTOCAST_PROMOTE(...) KERNEL_PRIVATEUSEONE(__VA_ARGS__, promote)
  AT_FORALL_LOWER_PRECISION_FP(TPU_AUTOCAST_LOWER)
  AT_FORALL_FP32(TPU_AUTOCAST_FP32)
  AT_FORALL_FP32_SET_OPT_DTYPE(TPU_AUTOCAST_FP32_DTYPE)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_REDISPATCH_SIGNATURE_PRIVATEUSEONE)
  AT_FORALL_PROMOTE(TPU_AUTOCAST_PROMOTE)
#undef TPU_AUTOCAST_LOWER
#undef TPU_AUTOCAST_FP32
#undef TPU_AUTOCAST_FP32_DTYPE
#undef TPU_AUTOCAST_PROMOTE
  m.impl("binary_cross_entropy", TORCH_FN(binary_cross_entropy_refused));
}

}  // namespace autocast_lists

}  // namespace torch_tpu::aten
