// pixel_shuffle / pixel_unshuffle: ATen's own reshape-permute-reshape
// decompositions (their checks and messages included), with the result laid
// out as CPU's kernels lay it out: in the memory format the input suggests,
// so a channels_last network stays channels_last through a sub-pixel layer.
// native_channel_shuffle is channel_shuffle (register_composites.cc), which
// keeps that format too; ATen's generic decomposition of it does not.
#include <ATen/core/Tensor.h>
#include <ATen/ops/channel_shuffle.h>
#include <ATen/ops/pixel_shuffle_native.h>
#include <ATen/ops/pixel_unshuffle_native.h>
#include <torch/library.h>

#include <utility>

#include "aten/result_layout.h"

namespace torch_tpu::aten {

namespace {

at::Tensor pixel_shuffle(const at::Tensor& self, int64_t upscale_factor) {
  return in_memory_format_of(at::native::math_pixel_shuffle(self, upscale_factor), self);
}

at::Tensor pixel_unshuffle(const at::Tensor& self, int64_t downscale_factor) {
  return in_memory_format_of(at::native::math_pixel_unshuffle(self, downscale_factor), self);
}

// Registered above autograd, as the decomposition it replaces is: the
// channel_shuffle it calls has its own derivative.
at::Tensor native_channel_shuffle(const at::Tensor& self, c10::SymInt groups) {
  return at::channel_shuffle_symint(self, std::move(groups));
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("pixel_shuffle", pixel_shuffle);
  m.impl("pixel_unshuffle", pixel_unshuffle);
}

TORCH_LIBRARY_IMPL(aten, AutogradPrivateUse1, m) { m.impl("native_channel_shuffle", native_channel_shuffle); }

}  // namespace torch_tpu::aten
