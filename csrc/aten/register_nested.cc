// Nested tensors on tpu.
//
// Jagged nested tensors (layout=torch.jagged) are a Python subclass over
// plain tpu tensors: they need only the two conversions between their
// values and a padded dense tensor, below, which PyTorch implements for CPU
// and CUDA only (padding, reductions over the ragged dim, their softmax and
// layer_norm).
//
// A nested tensor with the strided layout (the default of
// torch.nested.nested_tensor) is a NestedTensorImpl over one flat tpu
// buffer; its ops dispatch on NestedTensorPrivateUse1, for which PyTorch
// registers no kernels. Most of PyTorch's nested kernels are one
// device-generic function registered for both NestedTensorCPU and
// NestedTensorCUDA: they rearrange the buffer with ordinary ATen ops (which
// then run on tpu) and keep the sizes on the host. Those are run here by
// handing the call to the NestedTensorCPU kernel: the list is PyTorch
// 2.13's native_functions.yaml entries whose NestedTensorCPU and
// NestedTensorCUDA kernels are the same function, less layer_norm (whose
// kernel calls a CPU-only stub), plus bmm and to_padded_tensor, whose CPU
// kernels are built of ATen ops too (tests/test_nested.py compares them
// with CPU). The other CPU kernels (sum, the softmax and multi-head
// attention of the Transformer fast path) read the buffer on the host: a
// tpu buffer there would crash the process, so those ops are refused with a
// message pointing at the jagged layout, which tpu supports.
#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <ATen/ops/arange.h>
#include <ATen/ops/full.h>
#include <ATen/ops/searchsorted.h>
#include <ATen/ops/where.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/fallback.h"

namespace torch_tpu::aten {

namespace {

// values [total, *D] with offsets [B + 1] -> [B, max_length, *D]: row b holds
// values[offsets[b] : offsets[b + 1]] (cut at max_length), then padding.
at::Tensor jagged_to_padded_dense(const at::Tensor& values, at::TensorList offsets, at::IntArrayRef max_lengths,
                                  double padding_value) {
  const char* op = "aten::_jagged_to_padded_dense_forward";
  TORCH_CHECK(offsets.size() == 1 && max_lengths.size() == 1, op, ": only one jagged dim is supported, got ",
              offsets.size(), " offsets and ", max_lengths.size(), " max_lengths");
  TORCH_CHECK(values.dim() >= 1 && offsets[0].dim() == 1 && offsets[0].numel() >= 1, op,
              ": expected values of at least 1 dim and 1-D offsets, got ", values.sizes(), " and ",
              offsets[0].sizes());
  const at::Tensor& offset = offsets[0];
  const int64_t batch = offset.numel() - 1, length = max_lengths[0];
  std::vector<int64_t> shape{batch, length};
  shape.insert(shape.end(), values.sizes().begin() + 1, values.sizes().end());
  if (values.size(0) == 0 || batch == 0 || length == 0) return at::full(shape, padding_value, values.options());
  const at::Tensor position = at::arange(length, offset.options());                     // [L]
  const at::Tensor starts = offset.narrow(0, 0, batch).unsqueeze(1);                    // [B, 1]
  const at::Tensor inside = position.lt(offset.narrow(0, 1, batch).unsqueeze(1).sub(starts));  // [B, L]
  const at::Tensor rows = at::where(inside, starts.add(position), 0).flatten();
  at::Tensor gathered = values.index_select(0, rows).view(shape);
  std::vector<int64_t> mask_shape{batch, length};
  mask_shape.resize(shape.size(), 1);
  return at::where(inside.view(mask_shape), gathered, at::full({}, padding_value, values.options()));
}

// dense [B, L, *D] with offsets [B + 1] -> values [total, *D]: value i is
// dense[b, i - offsets[b]] for the b whose range holds i.
at::Tensor padded_dense_to_jagged(const at::Tensor& dense, at::TensorList offsets, std::optional<int64_t> total) {
  const char* op = "aten::_padded_dense_to_jagged_forward";
  TORCH_CHECK(offsets.size() == 1, op, ": only one jagged dim is supported, got ", offsets.size(), " offsets");
  TORCH_CHECK(dense.dim() >= 2 && offsets[0].dim() == 1 && offsets[0].numel() == dense.size(0) + 1, op,
              ": expected dense [B, L, ...] and offsets [B + 1], got ", dense.sizes(), " and ", offsets[0].sizes());
  const at::Tensor& offset = offsets[0];
  // Without total_L the length is read back, as CPU and CUDA do.
  const int64_t count = total ? *total : offset.select(0, -1).item<int64_t>();
  const int64_t batch = dense.size(0), length = dense.size(1);
  std::vector<int64_t> flat_shape{batch * length};
  flat_shape.insert(flat_shape.end(), dense.sizes().begin() + 2, dense.sizes().end());
  const at::Tensor index = at::arange(count, offset.options());
  const at::Tensor row = at::searchsorted(offset, index, /*out_int32=*/false, /*right=*/true).sub(1);
  const at::Tensor column = index.sub(offset.index_select(0, row));
  return dense.reshape(flat_shape).index_select(0, row.mul(length).add(column));
}

// Registered one by one (a fallback would come after the CompositeImplicit
// kernels of linear, matmul and the like, which read a nested tensor's sizes).
const std::vector<const char*>& device_generic_nested_kernels() {
  static const std::vector<const char*> ops{
      "native_dropout", "native_dropout_backward", "abs", "abs_", "sgn", "sgn_",
      "add.Tensor", "add_.Tensor", "all.dim", "logical_not", "logical_not_",
      "cat", "chunk", "copy_", "cos", "div.Tensor", "div.Scalar",
      "embedding", "empty_like", "fill_.Scalar", "fill_.Tensor", "isnan",
      "is_same_size", "linear",
      "linear_backward", "matmul", "matmul_backward", "matmul.out",
      "value_selecting_reduction_backward", "mul.Tensor", "mul_.Tensor", "mul.Scalar",
      "mul_.Scalar", "narrow", "ones_like", "neg", "neg_", "relu",
      "relu_", "gelu_", "gelu", "gelu_backward", "select.int",
      "_nested_select_backward", "silu", "silu_", "silu_backward", "sin",
      "detach", "_softmax", "_softmax_backward_data", "split_with_sizes", "squeeze",
      "squeeze.dim", "squeeze.dims", "sqrt", "tanh", "tanh_",
      "threshold_backward", "transpose.int", "_nested_tensor_size",
      "_nested_tensor_strides", "_nested_tensor_storage_offsets",
      "_nested_from_padded_and_nested_example", "unsqueeze", "where.self",
      "where.self_out", "clone", "zero_", "sub.Tensor", "values", "unbind.int",
      "_to_copy", "masked_fill.Scalar", "view", "eq.Scalar", "eq.Tensor",
      "ge.Scalar", "gt.Scalar", "normal_", "alias", "isinf", "isposinf",
      "isneginf", "_safe_softmax", "_transformer_encoder_layer_fwd", "to_padded_tensor", "bmm"};
  return ops;
}

void run_device_generic_kernel(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::NestedTensorCPU), stack);
}

// A strided nested tensor made from a dense tpu tensor, its sizes (and
// strides and offsets) being host tensors (jagged attention's backward
// makes one): the CPU kernel builds the NestedTensorImpl, with ATen ops on
// the tpu tensor where it rearranges it.
void view_dense_buffer(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack* stack) {
  op.redispatchBoxed(c10::DispatchKeySet(c10::DispatchKey::CPU), stack);
}

void refuse_nested(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, op_name(op),
                              " is not supported on tpu for nested tensors with the strided layout; "
                              "torch.nested.nested_tensor(..., layout=torch.jagged) is supported, or nest CPU "
                              "tensors");
}

// nn.TransformerEncoder built with mask_check=False packs a padded batch
// into a strided nested tensor without asking first; with the default
// mask_check=True it asks _nested_tensor_from_mask_left_aligned, which says
// no on tpu, and takes its padded path.
at::Tensor nested_tensor_from_mask(const at::Tensor&, const at::Tensor&, bool) {
  TORCH_CHECK_NOT_IMPLEMENTED(false,
                              "aten::_nested_tensor_from_mask: tpu tensors cannot be packed into nested tensors with "
                              "the strided layout; nn.TransformerEncoder takes its padded path on tpu with "
                              "mask_check=True (the default) or enable_nested_tensor=False");
}

}  // namespace

TORCH_LIBRARY_IMPL(_, NestedTensorPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&refuse_nested>());
}

TORCH_LIBRARY_IMPL(aten, NestedTensorPrivateUse1, m) {
  for (const char* op : device_generic_nested_kernels()) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&run_device_generic_kernel>());
  }
}

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_nested_tensor_from_mask", nested_tensor_from_mask);
  m.impl("_jagged_to_padded_dense_forward", jagged_to_padded_dense);
  m.impl("_padded_dense_to_jagged_forward", padded_dense_to_jagged);
  m.impl("_nested_view_from_buffer", torch::CppFunction::makeFromBoxedFunction<&view_dense_buffer>());
  // The backward of to_padded_tensor: CPU's kernel selects the padded
  // tensor's elements with ATen ops (which run on tpu) and reads only the
  // sizes, a host tensor.
  m.impl("_nested_from_padded", torch::CppFunction::makeFromBoxedFunction<&view_dense_buffer>());
}

}  // namespace torch_tpu::aten
