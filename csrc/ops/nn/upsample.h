// Lowerings of upsampling (nearest, nearest-exact, linear / bilinear /
// trilinear, bicubic, antialiased bilinear / bicubic) over the trailing
// spatial dims, forward and backward.
//
// Each spatial axis is resampled separately (the last first, as PyTorch's
// CPU kernels nest their loops): an output position reads a few input
// positions ("taps") with weights computed on the host by PyTorch's
// formulas, in float (double for f64 tensors), so indices and weights
// match CPU exactly. The forward gathers the taps; the backward applies
// the transposed resampling matrix. 16-bit floats compute in f32.
#pragma once

#include <optional>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// The antialiased modes (F.interpolate(..., antialias=True)) widen the
// filter by the downscaling factor, so each output averages every input it
// covers (PIL's resampling, as torchvision uses it).
enum class UpsampleMode : char {
  kNearest = 'n',
  kNearestExact = 'e',
  kLinear = 'l',
  kCubic = 'c',
  kLinearAntialias = 'L',
  kCubicAntialias = 'C',
};

// `output` and `scales` have one entry per spatial dim (the trailing
// output.size() dims of x); a scale is the user's scale factor, used as
// PyTorch uses it when given.
hlo::Value lower_upsample(hlo::Builder& b, const hlo::Value& x, UpsampleMode mode, bool align_corners,
                          const std::vector<int64_t>& output, const std::vector<std::optional<double>>& scales);

// The gradient of an input of `input_dims` (all dims) for the output
// gradient `grad`.
hlo::Value lower_upsample_backward(hlo::Builder& b, const hlo::Value& grad, const std::vector<int64_t>& input_dims,
                                   UpsampleMode mode, bool align_corners,
                                   const std::vector<std::optional<double>>& scales);

}  // namespace torch_tpu::ops
