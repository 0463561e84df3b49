// grid_sampler_2d / 3d (F.grid_sample on 4-d and 5-d input) and their
// backward, with PyTorch's CPU formulas for coordinates, padding and weights.
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

// grid_sampler_3d: input [N, C, D, H, W] sampled at grid [N, Do, Ho, Wo, 3]
// ((x, y, z)) -> [N, C, Do, Ho, Wo]; interpolation 0 (trilinear) or 1
// (nearest), padding as above.
hlo::Value lower_grid_sampler_3d(hlo::Builder& b, const hlo::Value& input, const hlo::Value& grid,
                                 int64_t interpolation, int64_t padding, bool align_corners);

GridSamplerGrads lower_grid_sampler_3d_backward(hlo::Builder& b, const hlo::Value& grad_output,
                                                const hlo::Value& input, const hlo::Value& grid,
                                                int64_t interpolation, int64_t padding, bool align_corners);

}  // namespace torch_tpu::ops
