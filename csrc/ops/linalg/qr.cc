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
  hlo::Value alpha = matrix::reduce(b, b.select(at, col, zeros), 1, &hlo::Builder::add, 0);

  // ||(alpha, x)|| scaled by the largest magnitude, so it neither
  // overflows nor underflows (LAPACK's dlapy3 / dnrm2).
  hlo::Value mag = b.abs(b.select(b.compare(rows, jb, "GE"), col, zeros));
  const TensorType real_batch = TensorType(mag.dtype(), {batch});
  hlo::Value largest = matrix::reduce(b, mag, 1, &hlo::Builder::maximum_in_reduction, 0);
  hlo::Value scale = b.select(b.compare(largest, b.constant_splat(0, real_batch), "EQ"),
                              b.constant_splat(1, real_batch), largest);
  hlo::Value scaled = b.divide(b.select(below, col, zeros),
                               matrix::from_real(b, b.broadcast_in_dim(scale, {batch, m}, {0}), dtype));
  hlo::Value xnorm2 = matrix::reduce(b, matrix::abs_squared(b, scaled), 1, &hlo::Builder::add, 0);
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

// Reflectors are handled in blocks of this many columns (LAPACK's
// blocked geqrf / ormqr): each block is one matrix product on the rest of
// the matrix instead of one pass over it per reflector. Blocks grow with
// the matrix so that a program holds at most about 16 of them.
int64_t block_columns(int64_t k) { return std::max<int64_t>(32, (k + 15) / 16); }

hlo::Value static_slice(hlo::Builder& b, const hlo::Value& x, std::vector<int64_t> starts,
                        std::vector<int64_t> limits) {
  return b.slice(x, std::move(starts), std::move(limits), std::vector<int64_t>(x.rank(), 1));
}

hlo::Value update_at(hlo::Builder& b, const hlo::Value& x, const hlo::Value& update, int64_t row, int64_t col) {
  return b.dynamic_update_slice(x, update, {i32(b, 0), i32(b, row), i32(b, col)});
}

// The block's reflectors as the columns of a unit lower-trapezoidal V
// [B, r, w] (1 on the diagonal, the packed entries below it, 0 above).
hlo::Value unit_lower(hlo::Builder& b, const hlo::Value& packed) {
  return b.select(matrix::triangle_mask(b, packed.dims(), /*upper=*/false, -1), packed,
                  matrix::identity(b, packed.dtype(), packed.dims()));
}

// The upper triangular T [B, w, w] with H_0 ... H_{w-1} = I - V T V^H
// (LAPACK's larft, forward and columnwise): column i is
// -tau_i T[:i, :i] V[:, :i]^H v_i above its diagonal and tau_i on it.
hlo::Value block_factor(hlo::Builder& b, const hlo::Value& v, const hlo::Value& tau) {
  const int64_t batch = v.dims()[0], w = v.dims()[2];
  hlo::Value gram = matrix::matmul(b, matrix::transpose(b, v, /*conjugate=*/true), v);
  const TensorType t_type(v.dtype(), {batch, w, w});
  Values out = b.while_loop(
      {i32(b, 0), b.constant_splat(0, t_type)},
      [w](hlo::Builder& c, const Values& s) { return Values{c.compare(s[0], i32(c, w), "LT")}; },
      [&, batch, w](hlo::Builder& c, const Values& s) {
        const hlo::Value& i = s[0];
        hlo::Value zero = i32(c, 0);
        hlo::Value column = c.reshape(c.dynamic_slice(gram, {zero, zero, i}, {batch, w, 1}), {batch, w});
        hlo::Value rows = c.iota(TensorType(ElementType::kS32, {batch, w}), 1);
        hlo::Value ib = c.broadcast_in_dim(i, {batch, w}, {});
        column = c.select(c.compare(rows, ib, "LT"), column, c.constant_splat(0, column.type()));
        hlo::DotDims dims;
        dims.lhs_batch_dims = {0};
        dims.rhs_batch_dims = {0};
        dims.lhs_contracting_dims = {2};
        dims.rhs_contracting_dims = {1};
        hlo::Value t_column = c.dot_general(s[1], column, dims, hlo::Precision::kHighest);
        hlo::Value tau_i = c.broadcast_in_dim(
            c.reshape(c.dynamic_slice(tau, {zero, i}, {batch, 1}), {batch}), {batch, w}, {0});
        t_column = c.select(c.compare(rows, ib, "EQ"), tau_i, c.negate(c.multiply(tau_i, t_column)));
        return Values{c.add(i, i32(c, 1)),
                      c.dynamic_update_slice(s[1], c.reshape(t_column, {batch, w, 1}), {zero, zero, i})};
      });
  return out[1];
}

// Unblocked geqrf of a panel [B, r, w] (every column of it).
Values factor_panel(hlo::Builder& b, const hlo::Value& panel) {
  const int64_t batch = panel.dims()[0], w = panel.dims()[2];
  Values out = b.while_loop(
      {i32(b, 0), panel, b.constant_splat(0, TensorType(panel.dtype(), {batch, w}))},
      [w](hlo::Builder& c, const Values& v) { return Values{c.compare(v[0], i32(c, w), "LT")}; }, geqrf_step);
  return {out[1], out[2]};
}

}  // namespace

std::pair<hlo::Value, hlo::Value> lower_geqrf(hlo::Builder& b, const hlo::Value& a) {
  const int64_t m = a.dims()[a.rank() - 2], n = a.dims()[a.rank() - 1], k = std::min(m, n);
  const TensorType tau_type(a.dtype(), with_tail(a, {k}));
  if (has_zero_dim(a.dims())) return {a, b.constant_splat(0, tau_type)};
  hlo::Value flat = matrix::flatten_batch(b, a);
  const int64_t batch = flat.dims()[0], block = block_columns(k);
  Values taus;
  for (int64_t p = 0; p < k; p += block) {
    const int64_t w = std::min(block, k - p);
    Values panel = factor_panel(b, static_slice(b, flat, {0, p, p}, {batch, m, p + w}));
    flat = update_at(b, flat, panel[0], p, p);
    taus.push_back(panel[1]);
    if (p + w == n) continue;
    // The rest of the rows' columns take the block's Q^H = I - V T^H V^H.
    hlo::Value v = unit_lower(b, panel[0]);
    hlo::Value t = block_factor(b, v, panel[1]);
    hlo::Value rest = static_slice(b, flat, {0, p, p + w}, {batch, m, n});
    hlo::Value vh_rest = matrix::matmul(b, matrix::transpose(b, v, true), rest);
    rest = b.subtract(rest, matrix::matmul(b, v, matrix::matmul(b, matrix::transpose(b, t, true), vh_rest)));
    flat = update_at(b, flat, rest, p, p + w);
  }
  hlo::Value tau = taus.size() == 1 ? taus[0] : b.concatenate(taus, 1);
  return {b.reshape(flat, a.dims()), b.reshape(tau, tau_type.dims)};
}

hlo::Value lower_apply_householder(hlo::Builder& b, const hlo::Value& reflectors, const hlo::Value& tau,
                                   const hlo::Value& c, bool left, bool adjoint) {
  const int64_t k = tau.dims().back();
  if (k == 0 || has_zero_dim(c.dims())) return c;
  hlo::Value v_all = matrix::flatten_batch(b, reflectors);
  hlo::Value x = matrix::flatten_batch(b, c);
  const int64_t batch = x.dims()[0], r = v_all.dims()[1], block = block_columns(k);
  hlo::Value taus = b.reshape(tau, {batch, k});
  std::vector<int64_t> starts;
  for (int64_t p = 0; p < k; p += block) starts.push_back(p);
  // Q = H_0 ... H_{k-1}; Q C and C Q^H apply the last block first.
  if (left != adjoint) std::reverse(starts.begin(), starts.end());
  for (int64_t p : starts) {
    const int64_t w = std::min(block, k - p);
    hlo::Value v = unit_lower(b, static_slice(b, v_all, {0, p, p}, {batch, r, p + w}));
    hlo::Value t = block_factor(b, v, static_slice(b, taus, {0, p}, {batch, p + w}));
    if (adjoint) t = matrix::transpose(b, t, true);
    hlo::Value vh = matrix::transpose(b, v, true);
    if (left) {  // rows p.. of C take (I - V T V^H) C
      hlo::Value rows = static_slice(b, x, {0, p, 0}, {batch, r, x.dims()[2]});
      rows = b.subtract(rows, matrix::matmul(b, v, matrix::matmul(b, t, matrix::matmul(b, vh, rows))));
      x = update_at(b, x, rows, p, 0);
    } else {  // columns p.. of C take C (I - V T V^H)
      hlo::Value cols = static_slice(b, x, {0, 0, p}, {batch, x.dims()[1], r});
      cols = b.subtract(cols, matrix::matmul(b, matrix::matmul(b, matrix::matmul(b, cols, v), t), vh));
      x = update_at(b, x, cols, 0, p);
    }
  }
  return b.reshape(x, c.dims());
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
