// Lowerings of torch.special's classical orthogonal polynomials P_n(x):
// Chebyshev T, U, V, W (and their shifted forms on [0, 1]), physicists' and
// probabilists' Hermite, Laguerre and Legendre. n comes per element (a
// tensor, truncated to an integer as the CPU kernels do). Values follow the
// CPU kernels: the three-term recurrence, with the trigonometric closed
// forms of the Chebyshev polynomials for large n inside (-1, 1) and their
// exact values at the ends of the interval.
#pragma once

#include "hlo/builder.h"
#include "ops/elementwise/binary_math.h"

namespace torch_tpu::ops {

// `p`: one of BinaryMathOp's polynomials (kChebyshevT ... kLegendreP); x and
// n: one float type and one shape.
hlo::Value lower_polynomial(hlo::Builder& b, BinaryMathOp p, const hlo::Value& x, const hlo::Value& n);

}  // namespace torch_tpu::ops
