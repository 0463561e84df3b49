// Householder QR in LAPACK's conventions (geqrf, orgqr / householder_product,
// ormqr), each an HLO while loop over the reflectors: XLA has no QR op that
// every plugin lowers. The reflectors match LAPACK's, so Q and R (and their
// signs) match CPU's for matrices of full rank.
#pragma once

#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// geqrf: (a, tau) with R on and above a's diagonal and reflector i's vector
// below it (its leading 1 implied); H_i = I - tau_i v_i v_i^H and
// A = H_0 H_1 ... H_{k-1} R, k = min(m, n). tau is [..., k].
std::pair<hlo::Value, hlo::Value> lower_geqrf(hlo::Builder& b, const hlo::Value& a);

// ormqr: Q C, Q^H C (left) or C Q, C Q^H, where Q = H_0 ... H_{k-1} is given
// by geqrf's reflectors (the first k columns of `reflectors`, k = tau's
// last dim). Batch dims must be equal.
hlo::Value lower_apply_householder(hlo::Builder& b, const hlo::Value& reflectors, const hlo::Value& tau,
                                   const hlo::Value& c, bool left, bool adjoint);

// householder_product (orgqr): the first n columns of Q, [..., m, n].
hlo::Value lower_householder_product(hlo::Builder& b, const hlo::Value& reflectors, const hlo::Value& tau);

// linalg.qr: (Q, R) for mode "reduced" (Q [m, k], R [k, n]) or "complete"
// (Q [m, m], R [m, n]). Mode "r" is geqrf's upper triangle.
std::pair<hlo::Value, hlo::Value> lower_qr(hlo::Builder& b, const hlo::Value& a, bool complete);

}  // namespace torch_tpu::ops
