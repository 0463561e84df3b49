// Hermitian eigendecomposition and singular value decomposition by Jacobi
// rotations, as HLO while loops (XLA has no eigh / SVD op that every plugin
// lowers; XLA's own TPU lowering is Jacobi too). Each sweep pairs every
// index with every other once, n / 2 disjoint pairs at a time in a
// round-robin tournament, so a round is a few whole-matrix elementwise
// operations; sweeps repeat until the off-diagonal part (eigh) or the
// columns' cosines (SVD) fall to rounding level, at most kMaxSweeps times.
//
// Signs (phases) of eigenvectors and singular vectors are arbitrary, as in
// LAPACK; they are not LAPACK's.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct Eigh {
  hlo::Value eigenvalues;   // [..., n], real, ascending
  hlo::Value eigenvectors;  // [..., n, n], columns
  // i32 [...]: 2 where the input holds NaN, 1 where it holds only
  // infinities (the results are NaN for both), else 0
  hlo::Value info;
};

// A = V diag(w) V^H for Hermitian A read from its lower (or upper) triangle.
Eigh lower_eigh(hlo::Builder& b, const hlo::Value& a, bool upper);

struct Svd {
  hlo::Value u;   // [..., m, m] (full) or [..., m, k]
  hlo::Value s;   // [..., k], real, descending; k = min(m, n)
  hlo::Value vh;  // [..., n, n] (full) or [..., k, n]
  // i32 [...]: 2 where the input holds NaN, 1 where it holds only
  // infinities (u, s, vh are NaN for both), else 0
  hlo::Value info;
};

// A = U diag(S) Vh.
Svd lower_svd(hlo::Builder& b, const hlo::Value& a, bool full_matrices);

}  // namespace torch_tpu::ops
