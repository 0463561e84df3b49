// The matrix exponential (linalg.matrix_exp): Bader, Blanes and Casas's
// optimized degree-18 Taylor polynomial (5 matrix products) on A / 2^s,
// then s squarings, s from the 1-norm as in PyTorch. CPU picks a lower
// degree for small norms; degree 18 there is as accurate (to rounding).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// exp(A) for A [..., n, n] (floating or complex; 16-bit floats through f32).
hlo::Value lower_matrix_exp(hlo::Builder& b, const hlo::Value& a);

}  // namespace torch_tpu::ops
