// Least squares (linalg.lstsq) over the decompositions: QR for LAPACK's
// "gels" (full rank assumed, as LAPACK), the SVD for the rank-revealing
// drivers ("gelsy", "gelsd", "gelss": the minimum-norm solution with
// singular values at or below rcond * the largest one dropped).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct LeastSquares {
  hlo::Value solution;   // [..., n, k]
  hlo::Value residuals;  // [..., k]: squared residual norms (meaningful for m > n)
  hlo::Value rank;       // s64 [...] (SVD drivers)
  hlo::Value singular_values;  // [..., min(m, n)], real (SVD drivers)
  hlo::Value info;       // i32 [...] (gels): 1-based index of the first zero of R's diagonal, else 0
};

// min ||A X - B|| by QR; A [..., m, n] and B [..., m, k] with equal batch dims.
LeastSquares lower_lstsq_qr(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs);

// The minimum-norm least-squares solution through the SVD.
LeastSquares lower_lstsq_svd(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs, double rcond);

}  // namespace torch_tpu::ops
