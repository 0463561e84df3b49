// Lowerings of PyTorch's convolution (aten::convolution_overrideable) and
// its gradient, for any number of spatial dims, plain or transposed, as
// StableHLO convolutions in PyTorch's channels-first layout.
//
// A transposed convolution is the gradient of a plain one with respect to
// its input: a convolution over the input dilated by the stride (lhs
// dilation) with the kernel flipped and its feature dims swapped. The
// weight gradient is a convolution of the input with the output gradient
// (batch and feature roles swapped, groups as batch groups). 16-bit floats
// accumulate in f32.
#pragma once

#include <array>
#include <optional>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// One entry per spatial dim each; groups >= 1. Shapes were checked by the
// caller as ATen checks them.
struct ConvParams {
  std::vector<int64_t> stride;
  std::vector<int64_t> padding;
  std::vector<int64_t> dilation;
  bool transposed = false;
  std::vector<int64_t> output_padding;
  int64_t groups = 1;
  // How f32 convolutions multiply (torch.set_float32_matmul_precision, as
  // for matrix products; ops/linalg/matmul.h).
  hlo::Precision f32_precision = hlo::Precision::kHighest;
};

// input [N, C, *spatial]; weight [O, C/groups, *k] (transposed:
// [C, O/groups, *k]); bias [O]. The result has the input's dtype.
hlo::Value lower_convolution(hlo::Builder& b, const hlo::Value& input, const hlo::Value& weight,
                             const std::optional<hlo::Value>& bias, const ConvParams& p);

struct ConvGrads {
  std::optional<hlo::Value> input, weight, bias;
};

// The gradients selected by `mask` (input, weight, bias) of the convolution
// above for the output gradient `grad`.
ConvGrads lower_convolution_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                     const hlo::Value& weight, const ConvParams& p, std::array<bool, 3> mask);

}  // namespace torch_tpu::ops
