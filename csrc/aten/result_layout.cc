#include "aten/result_layout.h"

#include <ATen/TensorIterator.h>
#include <ATen/ops/empty_strided.h>
#include <c10/core/MemoryFormat.h>
#include <c10/util/strides.h>

#include <algorithm>
#include <numeric>
#include <optional>

namespace torch_tpu::aten {

at::Tensor with_strides(const at::Tensor& t, c10::IntArrayRef strides) {
  if (t.strides() == strides) return t;
  // Strides that differ only where a dim has one element address the same
  // elements: a view says so without a copy.
  bool same_elements = true;
  for (int64_t d = 0; d < t.dim(); ++d) same_elements = same_elements && (t.size(d) == 1 || t.stride(d) == strides[d]);
  if (same_elements) return t.as_strided(t.sizes(), strides, t.storage_offset());
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

namespace {

// torch._prims_common's is_contiguous: size-1 dims are skipped, and a
// stride may be the plain or the max(size, 1) product.
bool contiguous_like_prims(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  if (c10::multiply_integers(sizes) < 2) return true;
  int64_t expected = 1, expected_max = 1;
  for (int64_t d = static_cast<int64_t>(sizes.size()) - 1; d >= 0; --d) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected && strides[d] != expected_max) return false;
    expected *= sizes[d];
    expected_max *= std::max<int64_t>(sizes[d], 1);
  }
  return true;
}

// torch._prims_common's is_channels_last_contiguous_2d.
bool channels_last_like_prims(c10::IntArrayRef sizes, c10::IntArrayRef strides) {
  if (sizes.size() != 4) return false;
  int64_t expected = 1;
  for (int64_t d : {1, 3, 2, 0}) {
    if (sizes[d] == 1) continue;
    if (strides[d] != expected) return false;
    expected *= sizes[d];
  }
  return true;
}

// Dense strides with `order` (logical dims, outermost first) as the
// physical order: torch.empty_permuted's layout.
c10::DimVector permuted_strides(c10::IntArrayRef sizes, c10::IntArrayRef order) {
  c10::DimVector strides(sizes.size());
  int64_t stride = 1;
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    strides[*it] = stride;
    stride *= std::max<int64_t>(sizes[*it], 1);
  }
  return strides;
}

}  // namespace

c10::DimVector preserve_format_strides(const at::Tensor& like) {
  const c10::IntArrayRef sizes = like.sizes(), strides = like.strides();
  const int64_t n = like.dim();
  c10::DimVector order(n);
  std::iota(order.begin(), order.end(), 0);
  if (n < 2) return permuted_strides(sizes, order);
  const bool contiguous = contiguous_like_prims(sizes, strides);
  const bool channels_last = channels_last_like_prims(sizes, strides);
  if (contiguous && !channels_last) return permuted_strides(sizes, order);
  static constexpr int64_t kChannelsLast[] = {0, 2, 3, 1};
  if (channels_last && !contiguous) return permuted_strides(sizes, kChannelsLast);
  // compute_elementwise_output_logical_to_physical_perm for one tensor: an
  // insertion sort, innermost first, that leaves incomparable dims (a zero
  // stride) where they are.
  auto at_least = [](int64_t a, int64_t b) { return b == 0 || (a != 0 && (a >= b || a % b == 0)); };
  auto should_swap = [&](int64_t a, int64_t b) {
    const int64_t sa = strides[a], sb = strides[b];
    if (sa == 0 || sb == 0) return 0;
    if (sa == sb) return at_least(sizes[b], sizes[a]) ? 0 : 1;
    if (at_least(sb, sa)) return -1;
    if (at_least(sa, sb)) return 1;
    return 0;
  };
  c10::DimVector perm(order.rbegin(), order.rend());
  for (int64_t i = 1; i < n; ++i) {
    int64_t dim1 = i;
    for (int64_t dim0 = i - 1; dim0 >= 0; --dim0) {
      const int comparison = should_swap(perm[dim0], perm[dim1]);
      if (comparison > 0) {
        std::swap(perm[dim0], perm[dim1]);
        dim1 = dim0;
      } else if (comparison < 0) {
        break;
      }
    }
  }
  std::reverse(perm.begin(), perm.end());
  return permuted_strides(sizes, perm);
}

at::Tensor in_layout_of(const at::Tensor& t, const at::Tensor& like) {
  if (t.sizes() == like.sizes()) return with_strides(t, preserve_format_strides(like));
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
