// Depthwise convolutions (one input channel per group) as a sum over the
// kernel's taps of strided slices times per-channel weights.
//
// XLA's CPU compiler runs a convolution with one input channel per group
// 10 - 80 times slower than PyTorch's CPU kernel (a 3 x 3 over 64 channels
// of 256 x 256: 133 ms forward, CPU 12 ms; the taps form: 9.6 ms). The
// taps form is elementwise work that every XLA backend fuses into one
// loop; a depthwise convolution is bound by memory traffic on
// accelerators either way. Used for the forward, the input gradient (a
// transposed depthwise convolution) and the weight gradient.
#pragma once

#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Whether a plain convolution of x [N, C, *in] with a kernel [O,
// kernel_in_channels, *k] is depthwise (groups == C > 1, one input channel
// per group), of a real float type, with a kernel small enough for the
// taps form.
bool is_depthwise(const hlo::Value& x, int64_t kernel_in_channels, const std::vector<int64_t>& k, int64_t groups);

// The plain convolution: x [N, C, *in], w [C m, 1, *k] -> [N, C m, *out];
// `padding` low / high per spatial dim (non-negative), accumulated in
// `acc`.
hlo::Value depthwise_conv(hlo::Builder& b, const hlo::Value& x, const hlo::Value& w,
                          const std::vector<int64_t>& stride, const std::vector<std::pair<int64_t, int64_t>>& padding,
                          const std::vector<int64_t>& dilation, ElementType acc);

// Its weight gradient [C m, 1, *k] for the output gradient g [N, C m,
// *out]: one reduction with an output per tap, so that the input and g are
// read once (a reduction per tap reads them once per tap).
hlo::Value depthwise_weight_grad(hlo::Builder& b, const hlo::Value& x, const hlo::Value& g,
                                 const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                                 const std::vector<std::pair<int64_t, int64_t>>& padding,
                                 const std::vector<int64_t>& dilation, ElementType acc);

}  // namespace torch_tpu::ops
