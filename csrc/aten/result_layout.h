// Result strides that PyTorch's shape functions promise.
//
// Graph capture (torch.export, AOTAutograd, make_fx, torch.compile) runs ops
// on fake tensors whose strides come from PyTorch's meta kernels, and decides
// from them whether a later reshape can be a view. CPU and CUDA kernels give
// their results exactly those strides: factorizations store matrices by
// columns (LAPACK's layout), attention returns its output in the query's
// layout. A tpu result with other strides makes a captured graph's view fail
// on it ("view size is not compatible with input tensor's size and stride"),
// so the ops whose promised strides are not row-major relayout their results.
// In strict eager that is one copy program; fused and compiled graphs fuse it.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/util/DimVector.h>
#include <c10/util/ArrayRef.h>

#include <optional>
#include <vector>

#include "aten/op_runner.h"

namespace torch_tpu::aten {

// `t`'s values with exactly `strides` (a dense layout of t's shape).
at::Tensor with_strides(const at::Tensor& t, c10::IntArrayRef strides);

// Matrices stored by columns in the last two dims, batch dims row-major
// (ATen's batched_matrix_contiguous_strides with f_contig).
at::Tensor column_major(const at::Tensor& t);

// The strides of empty_like(like) in its default preserve_format, as
// PyTorch's meta kernel (torch._refs.empty_like) computes them, so that they
// match fake tensors'. Computed here: the meta kernel is Python, and calling
// it cost 0.4 - 0.9 ms of host time per minGPT training step (BENCHMARKS.md).
// Small vectors: every op that keeps its input's layout asks.
c10::DimVector preserve_format_strides(const at::Tensor& like);

// The strides empty_like(like) gives when t has like's shape; otherwise
// like's dims ordered by stride, outermost first (attention's
// alloc_with_matching_layout).
at::Tensor in_layout_of(const at::Tensor& t, const at::Tensor& like);

// `t` in `format` (channels_last for a 4-D t, channels_last_3d for a 5-D
// one); `t` itself for any other format or rank.
at::Tensor in_memory_format(const at::Tensor& t, c10::MemoryFormat format);

// `t` in the memory format `like` suggests (channels_last for an NHWC 4-D
// tensor, channels_last_3d for a 5-D one), as CPU's pooling and
// resampling kernels and their shape functions allocate results; `t`
// itself for a contiguous `like`.
at::Tensor in_memory_format_of(const at::Tensor& t, const at::Tensor& like);

// The strides TensorIterator gives an elementwise result of `sizes` over
// `inputs`: dims ordered as the inputs' strides order them. None where
// row-major is that layout (every input contiguous) or where the inputs do
// not broadcast to `sizes`.
std::optional<std::vector<int64_t>> iterator_strides(c10::IntArrayRef sizes, c10::ScalarType dtype,
                                                     const std::vector<const at::Tensor*>& inputs);

// An elementwise op's result (computed row-major) in the layout
// TensorIterator gives it on CPU, CUDA and meta: its dims ordered as the
// inputs' strides order them, so x.t() + 1 is transposed and a
// channels_last input keeps a channels_last result. `t` itself, at no
// cost, when every input is contiguous.
at::Tensor in_iterator_layout(const at::Tensor& t, const std::vector<TensorArg>& inputs);

}  // namespace torch_tpu::aten
