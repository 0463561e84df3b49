// grid_sampler_2d (F.grid_sample on 4-d input) and its backward, with
// PyTorch's CPU formulas for coordinates, padding and weights.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// input [N, C, H, W] sampled at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1])
// -> [N, C, Ho, Wo]. interpolation: 0 bilinear, 1 nearest, 2 bicubic; padding:
// 0 zeros, 1 border, 2 reflection.
hlo::Value lower_grid_sampler_2d(hlo::Builder& b, const hlo::Value& input, const hlo::Value& grid,
                                 int64_t interpolation, int64_t padding, bool align_corners);

struct GridSamplerGrads {
  hlo::Value input;  // [N, C, H, W]: each output's gradient spread over the positions it read
  hlo::Value grid;   // [N, Ho, Wo, 2]: zero for nearest
};

GridSamplerGrads lower_grid_sampler_2d_backward(hlo::Builder& b, const hlo::Value& grad_output,
                                                const hlo::Value& input, const hlo::Value& grid,
                                                int64_t interpolation, int64_t padding, bool align_corners);

}  // namespace torch_tpu::ops
