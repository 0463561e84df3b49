// out= forms of ops whose functional form has a tpu kernel (or decomposes
// into ops that have), for the ops where PyTorch registers the out= form
// per backend (pooling, upsampling, batch norm, nonzero_static,
// searchsorted, ...) and so gives the device no composite one: the
// functional form runs, and each result is written into its out tensor as
// ATen's out= kernels write it (resized with ATen's warning when a
// non-empty out changes shape, dtype and device checked).
// CUDA has these forms; without them they raised NotImplementedError here.
#include <ATen/core/dispatch/Dispatcher.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "aten/out_args.h"

namespace torch_tpu::aten {
namespace {

// "upsample_nearest2d.out" -> ("upsample_nearest2d", ""), "searchsorted.Scalar_out"
// -> ("searchsorted", "Scalar"), "avg_pool2d_backward.grad_input" -> (.., "").
c10::OperatorHandle functional_form(const c10::OperatorHandle& op) {
  const c10::OperatorName& name = op.operator_name();
  std::string overload = name.overload_name;
  const std::string suffix = "_out";
  if (overload == "out" || overload == "grad_input") {
    overload.clear();
  } else if (overload.size() > suffix.size() &&
             overload.compare(overload.size() - suffix.size(), suffix.size(), suffix) == 0) {
    overload.resize(overload.size() - suffix.size());
  }
  auto functional = c10::Dispatcher::singleton().findSchema({name.name, overload});
  TORCH_INTERNAL_ASSERT(functional.has_value(), name, " has no functional form ", name.name, ".", overload);
  return *functional;
}

// The out= forms this thread is computing: a functional form that PyTorch
// computes through its out= form (a structured op without a tpu kernel)
// would otherwise call back here without end.
thread_local std::vector<c10::OperatorName> g_in_progress;

struct InProgress {
  explicit InProgress(const c10::OperatorName& name) { g_in_progress.push_back(name); }
  ~InProgress() { g_in_progress.pop_back(); }
};

void functional_then_write(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  for (const auto& name : g_in_progress) {
    TORCH_CHECK_NOT_IMPLEMENTED(!(name == op.operator_name()), op.operator_name(),
                                " is not supported on tpu: its functional form has no tpu kernel");
  }
  const auto& arguments = op.schema().arguments();
  const size_t n = arguments.size();
  // The out tensors are the schema's last arguments (keyword-only, written).
  size_t first_out = n;
  while (first_out > 0 && arguments[first_out - 1].is_out()) --first_out;
  std::vector<at::Tensor> outs;
  for (size_t i = first_out; i < n; ++i) outs.push_back((*stack)[stack->size() - n + i].toTensor());
  stack->erase(stack->end() - static_cast<std::ptrdiff_t>(n - first_out), stack->end());

  {
    InProgress guard(op.operator_name());
    functional_form(op).callBoxed(stack);
  }
  const size_t results = op.schema().returns().size();
  TORCH_INTERNAL_ASSERT(stack->size() >= results && results == outs.size(), op.operator_name(),
                        ": results and out tensors differ in number");
  std::vector<at::Tensor> values;
  for (size_t i = 0; i < results; ++i) values.push_back((*stack)[stack->size() - results + i].toTensor());
  stack->erase(stack->end() - static_cast<std::ptrdiff_t>(results), stack->end());
  for (size_t i = 0; i < results; ++i) {
    TORCH_CHECK(outs[i].dtype() == values[i].dtype(), "Expected out tensor to have dtype ", values[i].dtype(),
                ", but got ", outs[i].dtype(), " instead");
    write_out(outs[i], values[i]);
    stack->emplace_back(outs[i]);
  }
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op : {
           "adaptive_avg_pool2d.out", "adaptive_avg_pool3d.out",
           "adaptive_max_pool2d.out", "adaptive_max_pool2d_backward.grad_input", "adaptive_max_pool3d.out",
           "adaptive_max_pool3d_backward.grad_input", "avg_pool2d.out", "avg_pool2d_backward.grad_input",
           "avg_pool3d.out", "avg_pool3d_backward.grad_input", "max_pool2d_with_indices.out",
           "max_pool2d_with_indices_backward.grad_input", "max_pool3d_with_indices.out",
           "max_pool3d_with_indices_backward.grad_input", "upsample_nearest1d.out",
           "upsample_nearest1d_backward.grad_input", "upsample_nearest2d.out", "upsample_nearest2d_backward.grad_input",
           "upsample_nearest3d.out", "upsample_nearest3d_backward.grad_input", "_upsample_nearest_exact1d.out",
           "_upsample_nearest_exact1d_backward.grad_input", "_upsample_nearest_exact2d.out",
           "_upsample_nearest_exact2d_backward.grad_input", "_upsample_nearest_exact3d.out",
           "_upsample_nearest_exact3d_backward.grad_input", "upsample_linear1d.out",
           "upsample_linear1d_backward.grad_input", "upsample_bilinear2d.out", "upsample_bilinear2d_backward.grad_input",
           "upsample_bicubic2d.out", "upsample_bicubic2d_backward.grad_input", "upsample_trilinear3d.out",
           "upsample_trilinear3d_backward.grad_input", "_upsample_bilinear2d_aa.out",
           "_upsample_bilinear2d_aa_backward.grad_input", "_upsample_bicubic2d_aa.out",
           "_upsample_bicubic2d_aa_backward.grad_input", "native_batch_norm.out", "_native_batch_norm_legit.out",
           "_native_batch_norm_legit.no_stats_out", "_batch_norm_with_update.out", "nonzero_static.out",
           "searchsorted.Scalar_out", "narrow_copy.out"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&functional_then_write>());
  }
}

}  // namespace torch_tpu::aten
