// The regularized incomplete gamma functions P(a, x) (igamma,
// special.gammainc) and Q(a, x) = 1 - P (igammac, special.gammaincc): the
// power series of P below x = a + 1 and Lentz's continued fraction of Q
// from there, iterated in one HLO while loop until every element
// converged, with CPU's special cases (NaN for a or x negative, for
// a = x = 0 and a = x = inf). The derivative of a Gamma sample in its
// shape (_standard_gamma_grad) builds on the same tails.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// a and x of one floating type and shape; `upper` gives Q, else P.
hlo::Value lower_incomplete_gamma(hlo::Builder& b, const hlo::Value& a, const hlo::Value& x, bool upper);

// Where the power series of P is the better way (x < a + 1); elsewhere
// the continued fraction of Q.
hlo::Value series_side(hlo::Builder& b, const hlo::Value& a, const hlo::Value& x);

// One tail in a form that keeps its logarithm accurate however small it
// is: where `use_series` P = factor * exp(log_prefactor), elsewhere Q =
// factor * exp(log_prefactor), with log_prefactor = log(x^a e^-x /
// Gamma(a + 1)). For a, x > 0 and finite.
struct GammaTail {
  hlo::Value log_prefactor;
  hlo::Value factor;
};
GammaTail lower_gamma_tail(hlo::Builder& b, const hlo::Value& a, const hlo::Value& x, const hlo::Value& use_series);

// _standard_gamma_grad: d x / d alpha of a Gamma(alpha, 1) sample x at a
// fixed value of its CDF (the implicit reparameterization gradient of
// Gamma.rsample), -(dP / d alpha) / pdf(x). d log P / d alpha (log Q in
// the upper tail) is the prefactor's slope in closed form plus a five-point
// difference of the smooth series (fraction) factor, so its accuracy does
// not rest on a fitted approximation; beyond the types' reach of that
// difference (alpha >= 1e4 in float32, 1e8 in float64) the Wilson-Hilferty
// approximation's derivative. 0 for x <= 0, as on CPU; NaN for alpha <= 0,
// infinite or NaN arguments (where CPU's series gives 0 or +-inf for some).
hlo::Value lower_standard_gamma_grad(hlo::Builder& b, const hlo::Value& alpha, const hlo::Value& x);

}  // namespace torch_tpu::ops
