// Lowerings of the Cholesky family and the triangular solvers on top of
// stablehlo.cholesky and stablehlo.triangular_solve: linalg_cholesky_ex,
// linalg_solve_triangular, triangular_solve, cholesky_solve and
// cholesky_inverse. Batch dims broadcast where ATen broadcasts them.
#pragma once

#include <cstdint>
#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// (L, info) with L L^H = A read from the lower triangle of `a`, or, when
// `upper`, (U, info) with U^H U = A read from the upper triangle (LAPACK's
// uplo); the other triangle zero. info (i32, batch shape) is k when the
// leading minor of order k is not positive-definite (the first k with no
// positive pivot), 0 otherwise, as LAPACK's potrf reports it.
std::pair<hlo::Value, hlo::Value> lower_cholesky_ex(hlo::Builder& b, const hlo::Value& a, bool upper);

// X with A X = B (left) or X A = B, A upper or lower triangular (only that
// triangle is read), its diagonal taken as ones when `unitriangular`.
hlo::Value lower_solve_triangular(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs, bool upper,
                                  bool left, bool unitriangular);

// The old API: X with op(A) X = B, op transposing A when `transpose`.
hlo::Value lower_triangular_solve(hlo::Builder& b, const hlo::Value& rhs, const hlo::Value& a, bool upper,
                                  bool transpose, bool unitriangular);

// X with (L L^H) X = B given L, or (U^H U) X = B given U when `upper`.
hlo::Value lower_cholesky_solve(hlo::Builder& b, const hlo::Value& rhs, const hlo::Value& factor, bool upper);

// (L L^H)^-1 given L, or (U^H U)^-1 given U when `upper`.
hlo::Value lower_cholesky_inverse(hlo::Builder& b, const hlo::Value& factor, bool upper);

}  // namespace torch_tpu::ops
