#include "ops/linalg/qr.h"

#include <algorithm>
#include <vector>

#include "ops/elementwise/unary.h"
#include "ops/linalg/matrix_util.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using Values = std::vector<hlo::Value>;

hlo::Value i32(hlo::Builder& b, int64_t v) { return b.constant_splat_int(v, TensorType::scalar(ElementType::kS32)); }

bool has_zero_dim(const std::vector<int64_t>& dims) {
  return std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d == 0; });
}

// Reflector j's vector from column j of x [B, r, k]: 1 at row j, x's
// entries below it, 0 above. ([B, r])
hlo::Value reflector(hlo::Builder& b, const hlo::Value& x, const hlo::Value& j) {
  const int64_t batch = x.dims()[0], r = x.dims()[1];
  hlo::Value zero = i32(b, 0);
  hlo::Value col = b.reshape(b.dynamic_slice(x, {zero, zero, j}, {batch, r, 1}), {batch, r});
  hlo::Value rows = b.iota(TensorType(ElementType::kS32, {batch, r}), 1);
  hlo::Value jb = b.broadcast_in_dim(j, {batch, r}, {});
  return b.select(b.compare(rows, jb, "EQ"), b.constant_splat(1, col.type()),
                  b.select(b.compare(rows, jb, "GT"), col, b.constant_splat(0, col.type())));
}

// Sum over dimension 1 of [B, r] (vector) times [B, r, q] -> [B, q].
hlo::Value contract_rows(hlo::Builder& b, const hlo::Value& vec, const hlo::Value& mat) {
  hlo::DotDims dims;
  dims.lhs_batch_dims = {0};
  dims.rhs_batch_dims = {0};
  dims.lhs_contracting_dims = {1};
  dims.rhs_contracting_dims = {1};
  return b.dot_general(vec, mat, dims, hlo::Precision::kHighest);
}

// One geqrf step (LAPACK's larfg + larf) on column j of a [B, m, n];
// carries (j, a, tau [B, k]).
Values geqrf_step(hlo::Builder& b, const Values& carried) {
  const hlo::Value& j = carried[0];
  hlo::Value a = carried[1], tau_all = carried[2];
  const int64_t batch = a.dims()[0], m = a.dims()[1], n = a.dims()[2];
  const ElementType dtype = a.dtype();
  const bool complex = is_complex(dtype);
  hlo::Value zero = i32(b, 0);

  hlo::Value col = b.reshape(b.dynamic_slice(a, {zero, zero, j}, {batch, m, 1}), {batch, m});
  const TensorType rows_type(ElementType::kS32, {batch, m});
  hlo::Value rows = b.iota(rows_type, 1);
  hlo::Value jb = b.broadcast_in_dim(j, {batch, m}, {});
  hlo::Value at = b.compare(rows, jb, "EQ"), below = b.compare(rows, jb, "GT");
  hlo::Value zeros = b.constant_splat(0, col.type());
  hlo::Value alpha = matrix::reduce(b, b.select(at, col, zeros), 1, "stablehlo.add", 0);

  // ||(alpha, x)|| scaled by the largest magnitude, so it neither
  // overflows nor underflows (LAPACK's dlapy3 / dnrm2).
  hlo::Value mag = b.abs(b.select(b.compare(rows, jb, "GE"), col, zeros));
  const TensorType real_batch = TensorType(mag.dtype(), {batch});
  hlo::Value largest = matrix::reduce(b, mag, 1, "stablehlo.maximum", 0);
  hlo::Value scale = b.select(b.compare(largest, b.constant_splat(0, real_batch), "EQ"),
                              b.constant_splat(1, real_batch), largest);
  hlo::Value scaled = b.divide(b.select(below, col, zeros),
                               matrix::from_real(b, b.broadcast_in_dim(scale, {batch, m}, {0}), dtype));
  hlo::Value xnorm2 = matrix::reduce(b, matrix::abs_squared(b, scaled), 1, "stablehlo.add", 0);
  hlo::Value alpha_r = complex ? b.real(alpha) : alpha;
  hlo::Value alpha_i = complex ? b.imag(alpha) : b.constant_splat(0, real_batch);
  hlo::Value ar = b.divide(alpha_r, scale), ai = b.divide(alpha_i, scale);
  hlo::Value norm = b.multiply(scale, b.sqrt(b.add(b.add(b.multiply(ar, ar), b.multiply(ai, ai)), xnorm2)));
  hlo::Value beta = b.select(b.compare(alpha_r, b.constant_splat(0, real_batch), "GE"), b.negate(norm), norm);
  // Nothing to eliminate: H = I (tau = 0), as LAPACK.
  hlo::Value trivial = b.and_(b.compare(xnorm2, b.constant_splat(0, real_batch), "EQ"),
                              b.compare(alpha_i, b.constant_splat(0, real_batch), "EQ"));
  hlo::Value tau_r = b.divide(b.subtract(beta, alpha_r), beta);
  hlo::Value tau = complex ? b.complex(tau_r, b.negate(b.divide(alpha_i, beta))) : tau_r;
  const TensorType batch_type(dtype, {batch});
  tau = b.select(trivial, b.constant_splat(0, batch_type), tau);
  hlo::Value beta_c = b.select(trivial, alpha, matrix::from_real(b, beta, dtype));
  hlo::Value denom = b.select(trivial, b.constant_splat(1, batch_type), b.subtract(alpha, beta_c));
  hlo::Value v = b.select(at, b.constant_splat(1, col.type()),
                          b.select(below, b.divide(col, b.broadcast_in_dim(denom, {batch, m}, {0})), zeros));

  // The trailing columns take H^H = I - conj(tau) v v^H from the left.
  const std::vector<int64_t> dims{batch, m, n};
  hlo::Value w = contract_rows(b, ops::conjugate(b, v), a);
  hlo::Value updated = b.subtract(
      a, b.multiply(b.broadcast_in_dim(ops::conjugate(b, tau), dims, {0}),
                    b.multiply(b.broadcast_in_dim(v, dims, {0, 1}), b.broadcast_in_dim(w, dims, {0, 2}))));
  hlo::Value new_col = b.select(at, b.broadcast_in_dim(beta_c, {batch, m}, {0}), b.select(below, v, col));
  hlo::Value cols = b.iota(TensorType(ElementType::kS32, dims), 2);
  hlo::Value jc = b.broadcast_in_dim(j, dims, {});
  a = b.select(b.compare(cols, jc, "GT"), updated,
               b.select(b.compare(cols, jc, "EQ"), b.broadcast_in_dim(new_col, dims, {0, 1}), a));
  tau_all = b.dynamic_update_slice(tau_all, b.reshape(tau, {batch, 1}), {zero, j});
  return {b.add(j, i32(b, 1)), a, tau_all};
}

std::vector<int64_t> with_tail(const hlo::Value& x, std::vector<int64_t> tail) {
  std::vector<int64_t> dims = matrix::batch_dims(x);
  dims.insert(dims.end(), tail.begin(), tail.end());
  return dims;
}

}  // namespace

std::pair<hlo::Value, hlo::Value> lower_geqrf(hlo::Builder& b, const hlo::Value& a) {
  const int64_t m = a.dims()[a.rank() - 2], n = a.dims()[a.rank() - 1], k = std::min(m, n);
  const TensorType tau_type(a.dtype(), with_tail(a, {k}));
  if (has_zero_dim(a.dims())) return {a, b.constant_splat(0, tau_type)};
  hlo::Value flat = matrix::flatten_batch(b, a);
  const int64_t batch = flat.dims()[0];
  Values out = b.while_loop(
      {i32(b, 0), flat, b.constant_splat(0, TensorType(a.dtype(), {batch, k}))},
      [k](hlo::Builder& c, const Values& v) { return Values{c.compare(v[0], i32(c, k), "LT")}; }, geqrf_step);
  return {b.reshape(out[1], a.dims()), b.reshape(out[2], tau_type.dims)};
}

hlo::Value lower_apply_householder(hlo::Builder& b, const hlo::Value& reflectors, const hlo::Value& tau,
                                   const hlo::Value& c, bool left, bool adjoint) {
  const int64_t k = tau.dims().back();
  if (k == 0 || has_zero_dim(c.dims())) return c;
  hlo::Value v_all = matrix::flatten_batch(b, reflectors);
  hlo::Value x = matrix::flatten_batch(b, c);
  const int64_t batch = x.dims()[0];
  hlo::Value taus = b.reshape(tau, {batch, k});
  // Q = H_0 ... H_{k-1}; Q C and C Q^H apply the last reflector first.
  const bool descending = left != adjoint;
  Values out = b.while_loop(
      {i32(b, 0), x},
      [k](hlo::Builder& cb, const Values& v) { return Values{cb.compare(v[0], i32(cb, k), "LT")}; },
      [&, k, batch, descending, left, adjoint](hlo::Builder& cb, const Values& carried) {
        hlo::Value i = carried[0], y = carried[1];
        hlo::Value j = descending ? cb.subtract(i32(cb, k - 1), i) : i;
        hlo::Value v = reflector(cb, v_all, j);
        hlo::Value t = cb.reshape(cb.dynamic_slice(taus, {i32(cb, 0), j}, {batch, 1}), {batch});
        if (adjoint) t = ops::conjugate(cb, t);
        const std::vector<int64_t>& dims = y.dims();
        hlo::Value tb = cb.broadcast_in_dim(t, dims, {0});
        hlo::Value update;
        if (left) {  // H y = y - t v (v^H y)
          hlo::Value w = contract_rows(cb, ops::conjugate(cb, v), y);
          update = cb.multiply(cb.broadcast_in_dim(v, dims, {0, 1}), cb.broadcast_in_dim(w, dims, {0, 2}));
        } else {  // y H = y - t (y v) v^H
          hlo::DotDims d;
          d.lhs_batch_dims = {0};
          d.rhs_batch_dims = {0};
          d.lhs_contracting_dims = {2};
          d.rhs_contracting_dims = {1};
          hlo::Value w = cb.dot_general(y, v, d, hlo::Precision::kHighest);
          update = cb.multiply(cb.broadcast_in_dim(w, dims, {0, 1}),
                               cb.broadcast_in_dim(ops::conjugate(cb, v), dims, {0, 2}));
        }
        return Values{cb.add(i, i32(cb, 1)), cb.subtract(y, cb.multiply(tb, update))};
      });
  return b.reshape(out[1], c.dims());
}

hlo::Value lower_householder_product(hlo::Builder& b, const hlo::Value& reflectors, const hlo::Value& tau) {
  return lower_apply_householder(b, reflectors, tau, matrix::identity(b, reflectors.dtype(), reflectors.dims()),
                                 /*left=*/true, /*adjoint=*/false);
}

std::pair<hlo::Value, hlo::Value> lower_qr(hlo::Builder& b, const hlo::Value& a, bool complete) {
  const int64_t rank = a.rank(), m = a.dims()[rank - 2], n = a.dims()[rank - 1], k = std::min(m, n);
  auto [packed, tau] = lower_geqrf(b, a);
  std::vector<int64_t> starts(rank, 0), strides(rank, 1), limits = packed.dims();
  hlo::Value r = packed;
  if (!complete) {
    limits[rank - 2] = k;
    r = b.slice(packed, starts, limits, strides);
  }
  r = matrix::keep_triangle(b, r, /*upper=*/true, 0);
  limits = packed.dims();
  limits[rank - 1] = k;
  hlo::Value reflectors = b.slice(packed, starts, limits, strides);
  hlo::Value q = lower_apply_householder(b, reflectors, tau,
                                         matrix::identity(b, a.dtype(), with_tail(a, {m, complete ? m : k})),
                                         /*left=*/true, /*adjoint=*/false);
  return {q, r};
}

}  // namespace torch_tpu::ops
