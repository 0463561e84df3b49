// ATen glue for grid_sampler_2d / 3d and their backward (F.grid_sample on
// 4-d and 5-d input reaches them): bilinear (trilinear), nearest and (2-d)
// bicubic interpolation, zeros / border / reflection padding. Lowerings:
// csrc/ops/nn/grid_sampler.cc.
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <array>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/nn/grid_sampler.h"

namespace torch_tpu::aten {

namespace {

// `rank`: 4 (grid_sampler_2d) or 5 (grid_sampler_3d).
void check_grid_sampler(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                        int64_t padding_mode, int64_t rank = 4) {
  TORCH_CHECK(input.scalar_type() == grid.scalar_type(), "grid_sampler(): expected input and grid to have same ",
              "dtype, but input has ", input.scalar_type(), " and grid has ", grid.scalar_type());
  TORCH_CHECK(input.dim() == rank && grid.dim() == rank, "grid_sampler(): expected ", rank, "D input and grid with ",
              "same number of dimensions, but got input with sizes ", input.sizes(), " and grid with sizes ",
              grid.sizes());
  TORCH_CHECK(input.size(0) == grid.size(0), "grid_sampler(): expected grid and input to have same batch size, ",
              "but got input with sizes ", input.sizes(), " and grid with sizes ", grid.sizes());
  TORCH_CHECK(grid.size(-1) == rank - 2, "grid_sampler(): expected grid to have size ", rank - 2,
              " in last dimension, but got grid with sizes ", grid.sizes());
  for (int64_t i = 2; i < rank; ++i) {
    TORCH_CHECK(input.size(i) > 0, "grid_sampler(): expected input to have non-empty spatial dimensions, but ",
                "input has sizes ", input.sizes(), " with dimension ", i, " being empty");
  }
  TORCH_CHECK(padding_mode >= 0 && padding_mode <= 2, "grid_sampler(): unknown padding mode ", padding_mode);
  TORCH_CHECK(interpolation_mode >= 0 && interpolation_mode <= 2, "grid_sampler(): unknown interpolation mode ",
              interpolation_mode);
  TORCH_CHECK(rank == 4 || interpolation_mode != 2, "grid_sampler(): bicubic interpolation only supports 4D input");
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(input.scalar_type()), "\"grid_sampler_2d_cpu\" not implemented for '",
                              c10::toString(input.scalar_type()), "'");
  to_element_type(input.scalar_type(), "aten::grid_sampler_2d");
}

std::string attributes(int64_t interpolation_mode, int64_t padding_mode, bool align_corners) {
  return std::to_string(interpolation_mode) + std::to_string(padding_mode) + (align_corners ? "a" : "-");
}

// The output's shape: [N, C] + the grid's spatial dims.
std::vector<int64_t> output_shape(const at::Tensor& input, const at::Tensor& grid) {
  std::vector<int64_t> shape = {input.size(0), input.size(1)};
  for (int64_t d = 1; d + 1 < grid.dim(); ++d) shape.push_back(grid.size(d));
  return shape;
}

at::Tensor grid_sampler(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation_mode,
                        int64_t padding_mode, bool align_corners, int64_t rank) {
  check_grid_sampler(input, grid, interpolation_mode, padding_mode, rank);
  OpCall call{rank == 4 ? "aten::grid_sampler_2d" : "aten::grid_sampler_3d",
              attributes(interpolation_mode, padding_mode, align_corners), {input, grid}, {}};
  return run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
           auto lower = rank == 4 ? ops::lower_grid_sampler_2d : ops::lower_grid_sampler_3d;
           return std::vector<hlo::Value>{lower(b, t[0], t[1], interpolation_mode, padding_mode, align_corners)};
         })
      .at(0);
}

std::tuple<at::Tensor, at::Tensor> grid_sampler_backward(const at::Tensor& grad_output, const at::Tensor& input,
                                                         const at::Tensor& grid, int64_t interpolation_mode,
                                                         int64_t padding_mode, bool align_corners,
                                                         std::array<bool, 2> output_mask, int64_t rank) {
  check_grid_sampler(input, grid, interpolation_mode, padding_mode, rank);
  const char* op = rank == 4 ? "aten::grid_sampler_2d_backward" : "aten::grid_sampler_3d_backward";
  TORCH_CHECK(grad_output.sizes() == at::IntArrayRef(output_shape(input, grid)), op + 6, ": grad_output has sizes ",
              grad_output.sizes(), ", expected the output's");
  OpCall call{op, attributes(interpolation_mode, padding_mode, align_corners), {grad_output, input, grid}, {}};
  auto r = run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto lower = rank == 4 ? ops::lower_grid_sampler_2d_backward : ops::lower_grid_sampler_3d_backward;
    ops::GridSamplerGrads g = lower(b, t[0], t[1], t[2], interpolation_mode, padding_mode, align_corners);
    return std::vector<hlo::Value>{g.input, g.grid};
  });
  return {output_mask[0] ? r[0] : at::Tensor(), output_mask[1] ? r[1] : at::Tensor()};
}

at::Tensor grid_sampler_2d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                           bool align) {
  return grid_sampler(input, grid, interpolation, padding, align, 4);
}
at::Tensor grid_sampler_3d(const at::Tensor& input, const at::Tensor& grid, int64_t interpolation, int64_t padding,
                           bool align) {
  return grid_sampler(input, grid, interpolation, padding, align, 5);
}
std::tuple<at::Tensor, at::Tensor> grid_sampler_2d_backward(const at::Tensor& g, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation,
                                                            int64_t padding, bool align, std::array<bool, 2> mask) {
  return grid_sampler_backward(g, input, grid, interpolation, padding, align, mask, 4);
}
std::tuple<at::Tensor, at::Tensor> grid_sampler_3d_backward(const at::Tensor& g, const at::Tensor& input,
                                                            const at::Tensor& grid, int64_t interpolation,
                                                            int64_t padding, bool align, std::array<bool, 2> mask) {
  return grid_sampler_backward(g, input, grid, interpolation, padding, align, mask, 5);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("grid_sampler_2d", grid_sampler_2d);
  m.impl("grid_sampler_2d_backward", grid_sampler_2d_backward);
  m.impl("grid_sampler_3d", grid_sampler_3d);
  m.impl("grid_sampler_3d_backward", grid_sampler_3d_backward);
}

}  // namespace torch_tpu::aten
