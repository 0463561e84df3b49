// LU factorization with partial pivoting (blocked as LAPACK's getrf, in HLO
// while loops: XLA has no LU op every plugin lowers), and what is built on it:
// lu_unpack, lu_solve, solve, inv, det and slogdet.
#pragma once

#include <cstdint>
#include <tuple>

#include "hlo/builder.h"

namespace torch_tpu::ops {

struct LuFactors {
  hlo::Value lu;      // [..., m, n]: unit-lower L below the diagonal, U on and above
  hlo::Value pivots;  // i32 [..., min(m, n)]: 1-based row swapped with row i at step i (LAPACK)
  hlo::Value perm;    // i32 [..., m]: row i of P^T A is row perm[i] of A
  hlo::Value info;    // i32 [...]: k for the first exactly zero pivot U[k-1, k-1], else 0
};

// A = P L U, as LAPACK's getrf computes it.
LuFactors lower_lu_factor(hlo::Builder& b, const hlo::Value& a);

// The permutation (as `perm` above) that LAPACK pivots of m rows describe.
hlo::Value pivots_to_perm(hlo::Builder& b, const hlo::Value& pivots, int64_t m);

// (P, L, U) from the packed factors; P in lu's dtype.
std::tuple<hlo::Value, hlo::Value, hlo::Value> lower_lu_unpack(hlo::Builder& b, const hlo::Value& lu,
                                                               const hlo::Value& perm);

// X with A X = B (left) or X A = B, A^H instead of A when `adjoint`, where
// A = P L U is given by its factors. Batch dims broadcast.
hlo::Value lower_lu_solve(hlo::Builder& b, const hlo::Value& lu, const hlo::Value& perm, const hlo::Value& rhs,
                          bool left, bool adjoint);

// det(A) from its factors.
hlo::Value lower_det_from_lu(hlo::Builder& b, const hlo::Value& lu, const hlo::Value& pivots);

// (sign, log|det|) from the factors; sign has lu's dtype, log|det| its real type.
std::pair<hlo::Value, hlo::Value> lower_slogdet_from_lu(hlo::Builder& b, const hlo::Value& lu,
                                                        const hlo::Value& pivots);

}  // namespace torch_tpu::ops
