#include "aten/result_layout.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/empty_like.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/MemoryFormat.h>
#include <c10/util/strides.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace torch_tpu::aten {

at::Tensor with_strides(const at::Tensor& t, c10::IntArrayRef strides) {
  if (t.strides() == strides) return t;
  at::Tensor out = at::empty_strided(t.sizes(), strides, t.options());
  out.copy_(t);
  return out;
}

at::Tensor column_major(const at::Tensor& t) {
  if (t.dim() < 2) return t;
  c10::DimVector strides = c10::contiguous_strides(t.sizes());
  const int64_t n = t.dim();
  strides[n - 1] = std::max<int64_t>(t.size(n - 2), 1);
  strides[n - 2] = 1;
  return with_strides(t, strides);
}

at::Tensor in_layout_of(const at::Tensor& t, const at::Tensor& like) {
  if (t.sizes() == like.sizes()) {
    // The common case costs no dispatch: a contiguous input keeps a
    // contiguous result (kernels return row-major results).
    if (like.is_contiguous() && t.is_contiguous()) return t;
    // empty_like's preserve_format rules, read off a meta tensor.
    at::Tensor meta = at::empty_strided(like.sizes(), like.strides(), like.options().device(c10::kMeta));
    return with_strides(t, at::empty_like(meta).strides());
  }
  TORCH_INTERNAL_ASSERT(t.dim() == like.dim(), "in_layout_of: ranks differ");
  std::vector<int64_t> order(like.dim());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t a, int64_t b) { return like.stride(a) > like.stride(b); });
  std::vector<int64_t> strides(t.dim());
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= t.size(*it);
  }
  return with_strides(t, strides);
}

at::Tensor in_memory_format(const at::Tensor& t, c10::MemoryFormat format) {
  if (format == c10::MemoryFormat::ChannelsLast && t.dim() == 4) {
    return with_strides(t, c10::get_channels_last_strides_2d(t.sizes()));
  }
  if (format == c10::MemoryFormat::ChannelsLast3d && t.dim() == 5) {
    return with_strides(t, c10::get_channels_last_strides_3d(t.sizes()));
  }
  return t;
}

at::Tensor in_memory_format_of(const at::Tensor& t, const at::Tensor& like) {
  return t.dim() == like.dim() ? in_memory_format(t, like.suggest_memory_format()) : t;
}

std::optional<std::vector<int64_t>> iterator_strides(c10::IntArrayRef sizes, c10::ScalarType dtype,
                                                     const std::vector<const at::Tensor*>& inputs) {
  if (sizes.size() < 2 || c10::multiply_integers(sizes) < 2) return std::nullopt;
  bool contiguous = true;
  for (const at::Tensor* input : inputs) contiguous = contiguous && input->is_contiguous();
  if (contiguous) return std::nullopt;
  // TensorIterator itself decides, over meta stand-ins of the inputs.
  at::TensorIteratorConfig config;
  config.check_all_same_dtype(false).set_check_mem_overlap(false).declare_static_dtype_and_device(
      dtype, c10::Device(c10::kMeta));
  config.add_owned_output(at::Tensor());
  for (const at::Tensor* input : inputs) {
    config.add_owned_const_input(
        at::empty_strided(input->sizes(), input->strides(), input->options().device(c10::kMeta)));
  }
  try {
    const at::TensorIterator iter = config.build();
    if (iter.output(0).sizes() != sizes) return std::nullopt;  // not an elementwise result
    return iter.output(0).strides().vec();
  } catch (const c10::Error&) {
    return std::nullopt;  // operands that do not broadcast together (an op's extra inputs): no layout to follow
  }
}

at::Tensor in_iterator_layout(const at::Tensor& t, const std::vector<TensorArg>& inputs) {
  std::vector<const at::Tensor*> tensors;
  tensors.reserve(inputs.size());
  for (const TensorArg& input : inputs) tensors.push_back(input.operator->());
  const auto strides = iterator_strides(t.sizes(), t.scalar_type(), tensors);
  return strides ? with_strides(t, *strides) : t;
}

}  // namespace torch_tpu::aten
