// The regularized incomplete beta function's continued fraction and the
// reparameterization gradient of Beta / Dirichlet samples built on it
// (_dirichlet_grad, the backward of Dirichlet.rsample and so Beta.rsample).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// _dirichlet_grad(x, alpha, total): for x ~ Beta(alpha, beta), beta =
// total - alpha, the derivative of x in alpha at fixed beta and fixed CDF,
// -(dI_x(alpha, beta) / d alpha) / pdf(x), divided by 1 - x as PyTorch
// defines the op. I_x = x^a (1 - x)^b / (a B(a, b)) times a continued
// fraction (DLMF 8.17.22), by Lentz's method, for x below the mean's side,
// else through 1 - I_(1-x)(b, a); the derivative of its log is the closed
// form of the prefactor's plus a five-point difference of the fraction's.
// CPU's special cases: 0 for x <= 0 and for alpha not > 0. Where beta <= 0
// or x > 1 (no Beta distribution) the result is NaN, where CPU's
// approximations give arbitrary numbers.
hlo::Value lower_dirichlet_grad(hlo::Builder& b, const hlo::Value& x, const hlo::Value& alpha,
                                const hlo::Value& total);

}  // namespace torch_tpu::ops
