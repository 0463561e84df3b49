// The regularized incomplete gamma functions P(a, x) (igamma,
// special.gammainc) and Q(a, x) = 1 - P (igammac, special.gammaincc): the
// power series of P below x = a + 1 and Lentz's continued fraction of Q
// from there, iterated in one HLO while loop until every element
// converged, with CPU's special cases (NaN for a or x negative, for
// a = x = 0 and a = x = inf).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// a and x of one floating type and shape; `upper` gives Q, else P.
hlo::Value lower_incomplete_gamma(hlo::Builder& b, const hlo::Value& a, const hlo::Value& x, bool upper);

}  // namespace torch_tpu::ops
