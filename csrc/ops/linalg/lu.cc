#include "ops/linalg/lu.h"

#include <algorithm>
#include <limits>
#include <vector>

#include "ops/broadcast.h"
#include "ops/linalg/matrix_util.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

std::vector<int64_t> with(std::vector<int64_t> dims, std::initializer_list<int64_t> tail) {
  dims.insert(dims.end(), tail);
  return dims;
}

hlo::Value i32(hlo::Builder& b, int64_t v) { return b.constant_splat_int(v, TensorType::scalar(ElementType::kS32)); }

// A 0-dim value broadcast to `dims`.
hlo::Value fill(hlo::Builder& b, const hlo::Value& s, const std::vector<int64_t>& dims) {
  return b.broadcast_in_dim(s, dims, {});
}

hlo::Value real_abs(hlo::Builder& b, const hlo::Value& x) { return b.abs(x); }

// The magnitude pivots are chosen by: LAPACK's (i?amax) |re| + |im| for
// complex values, so the pivots (and factors) match CPU's.
hlo::Value pivot_magnitude(hlo::Builder& b, const hlo::Value& x) {
  if (!is_complex(x.dtype())) return b.abs(x);
  return b.add(b.abs(b.real(x)), b.abs(b.imag(x)));
}

// x [B, m, w] with rows j (one for all batches) and p[B] swapped.
hlo::Value swap_rows(hlo::Builder& b, const hlo::Value& x, const hlo::Value& j, const hlo::Value& p) {
  const std::vector<int64_t>& dims = x.dims();
  const TensorType rows_type(ElementType::kS32, dims);
  hlo::Value rows = b.iota(rows_type, 1);
  hlo::Value is_j = b.compare(rows, fill(b, j, dims), "EQ");
  hlo::Value is_p = b.compare(rows, b.broadcast_in_dim(p, dims, {0}), "EQ");
  hlo::Value zero = b.constant_splat(0, x.type());
  hlo::Value row_j = b.dynamic_slice(x, {i32(b, 0), j, i32(b, 0)}, {dims[0], 1, dims[2]});
  hlo::Value row_p = matrix::reduce(b, b.select(is_p, x, zero), 1, &hlo::Builder::add, 0);
  return b.select(is_j, b.broadcast_in_dim(row_p, dims, {0, 2}),
                  b.select(is_p, b.broadcast_in_dim(row_j, dims, {0, 1, 2}), x));
}

// One elimination step (getf2) of column j of a panel x [B, M, w] whose
// rows above `top` are finished: the pivot is searched from row top + j
// down. Carries (j, x, perm [B, M, 1] (the panel's own row swaps),
// pivots [B, K], info [B]); pivots and info take global positions.
std::vector<hlo::Value> lu_step(hlo::Builder& b, const hlo::Value& top, const std::vector<hlo::Value>& carried) {
  const hlo::Value& j = carried[0];
  hlo::Value x = carried[1], perm = carried[2], pivots = carried[3], info = carried[4];
  const int64_t batch = x.dims()[0], m = x.dims()[1], n = x.dims()[2];
  const std::vector<int64_t> col_dims{batch, m};
  const TensorType col_index(ElementType::kS32, col_dims);
  const TensorType batch_index(ElementType::kS32, {batch});
  hlo::Value zero_i = i32(b, 0);
  hlo::Value row_j = b.add(top, j);  // the diagonal's row

  // The pivot: the first row at or below the diagonal of largest magnitude (idamax).
  hlo::Value col = b.reshape(b.dynamic_slice(x, {zero_i, zero_i, j}, {batch, m, 1}), col_dims);
  hlo::Value mag = pivot_magnitude(b, col);
  hlo::Value rows = b.iota(col_index, 1);
  hlo::Value at_or_below = b.compare(rows, fill(b, row_j, col_dims), "GE");
  mag = b.select(at_or_below, mag, b.constant_splat(-1, mag.type()));
  hlo::Value largest = matrix::reduce(b, mag, 1, &hlo::Builder::maximum_in_reduction, -std::numeric_limits<double>::infinity());
  hlo::Value hit = b.and_(at_or_below, b.compare(mag, b.broadcast_in_dim(largest, col_dims, {0}), "EQ"));
  hlo::Value p = matrix::reduce(b, b.select(hit, rows, b.constant_splat_int(m, col_index)), 1,
                                &hlo::Builder::minimum_in_reduction, static_cast<double>(m));
  // NaNs match nothing: keep the diagonal's row.
  p = b.select(b.compare(p, b.constant_splat_int(m, batch_index), "EQ"), fill(b, row_j, {batch}), p);
  hlo::Value global_j = b.add(top, j);
  pivots = b.dynamic_update_slice(pivots, b.reshape(b.add(p, b.constant_splat_int(1, batch_index)), {batch, 1}),
                                  {zero_i, global_j});
  x = swap_rows(b, x, row_j, p);
  perm = swap_rows(b, perm, row_j, p);

  // Eliminate below the pivot; a zero pivot (its column is all zero below)
  // is recorded in info and skipped, as getrf does.
  col = b.reshape(b.dynamic_slice(x, {zero_i, zero_i, j}, {batch, m, 1}), col_dims);
  hlo::Value d = b.reshape(b.dynamic_slice(x, {zero_i, row_j, j}, {batch, 1, 1}), {batch});
  hlo::Value d_abs = real_abs(b, d);
  hlo::Value zero_pivot = b.compare(d_abs, b.constant_splat(0, d_abs.type()), "EQ");
  hlo::Value first_zero = b.and_(b.compare(info, b.constant_splat_int(0, batch_index), "EQ"), zero_pivot);
  info = b.select(first_zero, fill(b, b.add(global_j, i32(b, 1)), {batch}), info);
  hlo::Value zero_col = b.constant_splat(0, col.type());
  hlo::Value below = b.and_(b.compare(rows, fill(b, row_j, col_dims), "GT"),
                            b.not_(b.broadcast_in_dim(zero_pivot, col_dims, {0})));
  hlo::Value l = b.select(below, b.divide(col, b.broadcast_in_dim(d, col_dims, {0})), zero_col);
  hlo::Value u = b.reshape(b.dynamic_slice(x, {zero_i, row_j, zero_i}, {batch, 1, n}), {batch, n});
  // Only the block below and right of the pivot changes (as getf2's dger
  // on the submatrix), so a non-finite pivot row cannot turn finished rows
  // into NaN through 0 * inf.
  const std::vector<int64_t>& dims = x.dims();
  const TensorType mat_index(ElementType::kS32, dims);
  hlo::Value rows_below = b.broadcast_in_dim(below, dims, {0, 1});
  hlo::Value cols = b.iota(mat_index, 2);
  hlo::Value l3 = b.broadcast_in_dim(l, dims, {0, 1});
  hlo::Value updated = b.subtract(x, b.multiply(l3, b.broadcast_in_dim(u, dims, {0, 2})));
  x = b.select(b.and_(rows_below, b.compare(cols, fill(b, j, dims), "GT")), updated,
               b.select(b.and_(rows_below, b.compare(cols, fill(b, j, dims), "EQ")), l3, x));
  return {b.add(j, i32(b, 1)), x, perm, pivots, info};
}

// Rows of x [B, r, c] picked by rows [B, r] (i32): out[b, i] = x[b, rows[b, i]].
hlo::Value gather_rows(hlo::Builder& b, const hlo::Value& x, const hlo::Value& rows) {
  const int64_t batch = x.dims()[0], r = x.dims()[1], c = x.dims()[2];
  const TensorType index_type(ElementType::kS32, {batch, r});
  hlo::Value flat_rows = rows;
  if (batch > 1) flat_rows = b.add(rows, b.multiply(b.iota(index_type, 0), b.constant_splat_int(r, index_type)));
  hlo::GatherDims g;
  g.offset_dims = {1};
  g.collapsed_slice_dims = {0};
  g.start_index_map = {0};
  g.index_vector_dim = 1;
  hlo::Value picked = b.gather(b.reshape(x, {batch * r, c}), b.reshape(flat_rows, {batch * r, 1}), g, {1, c});
  return b.reshape(picked, {batch, r, c});
}

// X with L X = A for the unit lower triangle of l [B, w, w] (its diagonal
// and upper part are not read), by forward substitution: row i of X is
// row i of A minus L[i, :i] X[:i]. XLA's triangular solve multiplies by
// inverted blocks instead, which turns an inf anywhere in a column of A
// into NaN over the whole column.
hlo::Value unit_lower_solve(hlo::Builder& b, const hlo::Value& l, const hlo::Value& a) {
  const int64_t batch = a.dims()[0], w = a.dims()[1], n = a.dims()[2];
  hlo::Value zero_i = i32(b, 0);
  std::vector<hlo::Value> out = b.while_loop(
      {zero_i, b.constant_splat(0, a.type())},
      [w](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        return std::vector<hlo::Value>{c.compare(v[0], i32(c, w), "LT")};
      },
      [&l, &a, batch, w, n](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        const hlo::Value &i = v[0], &x = v[1];
        hlo::Value zero = i32(c, 0);
        hlo::Value l_row = c.dynamic_slice(l, {zero, i, zero}, {batch, 1, w});
        const TensorType row_index(ElementType::kS32, {batch, 1, w});
        l_row = c.select(c.compare(c.iota(row_index, 2), c.broadcast_in_dim(i, {batch, 1, w}, {}), "LT"), l_row,
                         c.constant_splat(0, l_row.type()));
        // Rows i and below of x are still zero, so the masked entries multiply zeros.
        hlo::Value row = c.subtract(c.dynamic_slice(a, {zero, i, zero}, {batch, 1, n}), matrix::matmul(c, l_row, x));
        return std::vector<hlo::Value>{c.add(i, i32(c, 1)),
                                       c.dynamic_update_slice(x, row, {zero, i, zero})};
      });
  return out[1];
}

// Columns factored per panel. A panel's columns are eliminated one by one
// (a pass over the panel each); the rest of the matrix takes the panel's
// row swaps, triangular solve and Schur complement as matrix products.
// 16 was fastest on the CPU plugin from n = 128 to 2048 (8, 32, 64 and 128
// measured): narrower panels trade fewer passes over the panel for more
// passes over the matrix.
int64_t panel_columns(int64_t k) { return k <= 32 ? k : 16; }

// Blocked getrf (LAPACK's dgetrf with getf2 panels) of x [B, M, N], whose
// first K columns (a multiple of w) are factored, M, N >= K. One while loop
// over the panels with a dynamic offset, so that the program (and its
// compile time) does not grow with the matrix; each panel's updates cover
// the whole matrix, masked, at about three times getrf's flops.
// Carries (panel start, x, perm [B, M, 1], pivots [B, K], info [B]).
std::vector<hlo::Value> panel_step(hlo::Builder& b, int64_t w, const std::vector<hlo::Value>& carried) {
  const hlo::Value& top = carried[0];
  hlo::Value x = carried[1], perm = carried[2];
  const int64_t batch = x.dims()[0], m = x.dims()[1], n = x.dims()[2];
  hlo::Value zero_i = i32(b, 0);
  hlo::Value panel = b.dynamic_slice(x, {zero_i, zero_i, top}, {batch, m, w});
  std::vector<hlo::Value> f = b.while_loop(
      {zero_i, panel, b.iota(TensorType(ElementType::kS32, {batch, m, 1}), 1), carried[3], carried[4]},
      [w](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        return std::vector<hlo::Value>{c.compare(v[0], i32(c, w), "LT")};
      },
      [&top](hlo::Builder& c, const std::vector<hlo::Value>& v) { return lu_step(c, top, v); });
  panel = f[1];
  hlo::Value swaps = b.reshape(f[2], {batch, m});
  x = b.dynamic_update_slice(gather_rows(b, x, swaps), panel, {zero_i, zero_i, top});
  perm = gather_rows(b, perm, swaps);

  // U12 = L11^-1 A12 on the panel's rows, right of the panel.
  hlo::Value end = b.add(top, i32(b, w));
  const TensorType mat_index(ElementType::kS32, x.dims());
  hlo::Value l11 = b.dynamic_slice(panel, {zero_i, top, zero_i}, {batch, w, w});
  hlo::Value a12 = b.dynamic_slice(x, {zero_i, top, zero_i}, {batch, w, n});
  hlo::Value u12 = unit_lower_solve(b, l11, a12);
  const TensorType row_block_index(ElementType::kS32, {batch, w, n});
  hlo::Value right_of_panel = b.compare(b.iota(row_block_index, 2), b.broadcast_in_dim(end, {batch, w, n}, {}), "GE");
  u12 = b.select(right_of_panel, u12, b.constant_splat(0, u12.type()));
  x = b.dynamic_update_slice(x, b.select(right_of_panel, u12, a12), {zero_i, top, zero_i});

  // A22 -= L21 U12 below and right of the panel (selected, not added, so
  // that an inf times a masked zero cannot reach finished entries).
  const TensorType panel_index(ElementType::kS32, {batch, m, w});
  hlo::Value l21 = b.select(b.compare(b.iota(panel_index, 1), b.broadcast_in_dim(end, {batch, m, w}, {}), "GE"),
                            panel, b.constant_splat(0, panel.type()));
  hlo::Value trailing = b.and_(b.compare(b.iota(mat_index, 1), b.broadcast_in_dim(end, x.dims(), {}), "GE"),
                               b.compare(b.iota(mat_index, 2), b.broadcast_in_dim(end, x.dims(), {}), "GE"));
  x = b.select(trailing, b.subtract(x, matrix::matmul(b, l21, u12)), x);
  return {end, x, perm, f[3], f[4]};
}

// The permutation matrix P of `perm` (P[perm[i], i] = 1), in `dtype`.
hlo::Value permutation_matrix(hlo::Builder& b, const hlo::Value& perm, ElementType dtype) {
  const int64_t nb = perm.rank() - 1, m = perm.dims().back();
  const std::vector<int64_t> dims = with(std::vector<int64_t>(perm.dims().begin(), perm.dims().end() - 1), {m, m});
  std::vector<int64_t> bdims;
  for (int64_t d = 0; d < nb; ++d) bdims.push_back(d);
  bdims.push_back(nb + 1);
  hlo::Value perm_b = b.broadcast_in_dim(perm, dims, bdims);
  hlo::Value r = b.iota(TensorType(ElementType::kS32, dims), nb);
  return b.select(b.compare(perm_b, r, "EQ"), b.constant_splat(1, TensorType(dtype, dims)),
                  b.constant_splat(0, TensorType(dtype, dims)));
}

bool is_empty(const hlo::Value& x) { return count(x.dims()) == 0; }

}  // namespace

LuFactors lower_lu_factor(hlo::Builder& b, const hlo::Value& a) {
  const std::vector<int64_t> batch = matrix::batch_dims(a);
  const int64_t m = a.dims()[a.rank() - 2], n = a.dims().back(), k = std::min(m, n), nb = count(batch);
  const TensorType perm_type(ElementType::kS32, with(batch, {m}));
  const TensorType pivot_type(ElementType::kS32, with(batch, {k}));
  const TensorType info_type(ElementType::kS32, batch);
  if (nb == 0 || k == 0) {
    return {a, b.add(b.iota(pivot_type, pivot_type.rank() - 1), b.constant_splat_int(1, pivot_type)),
            b.iota(perm_type, perm_type.rank() - 1), b.constant_splat_int(0, info_type)};
  }
  // Zero rows and columns pad the matrix to whole panels: a zero row never
  // wins a pivot search over a real one (ties take the first row), and a
  // zero column's step swaps nothing; what they add is cut off below.
  const int64_t w = panel_columns(k), padded_k = (k + w - 1) / w * w;
  const int64_t pm = std::max(m, padded_k), pn = std::max(n, padded_k);
  hlo::Value x = b.reshape(a, {nb, m, n});
  if (pm != m || pn != n) {
    x = b.pad(x, b.constant_splat(0, TensorType::scalar(a.dtype())), {0, 0, 0}, {0, pm - m, pn - n}, {0, 0, 0});
  }
  std::vector<hlo::Value> init{i32(b, 0), x, b.iota(TensorType(ElementType::kS32, {nb, pm, 1}), 1),
                               b.constant_splat_int(0, TensorType(ElementType::kS32, {nb, padded_k})),
                               b.constant_splat_int(0, TensorType(ElementType::kS32, {nb}))};
  std::vector<hlo::Value> out = b.while_loop(
      init,
      [padded_k](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        return std::vector<hlo::Value>{c.compare(v[0], i32(c, padded_k), "LT")};
      },
      [w](hlo::Builder& c, const std::vector<hlo::Value>& v) { return panel_step(c, w, v); });
  hlo::Value lu = out[1], perm = out[2], pivots = out[3], info = out[4];
  if (pm != m || pn != n) lu = b.slice(lu, {0, 0, 0}, {nb, m, n}, {1, 1, 1});
  if (pm != m) perm = b.slice(perm, {0, 0, 0}, {nb, m, 1}, {1, 1, 1});
  if (padded_k != k) {
    pivots = b.slice(pivots, {0, 0}, {nb, k}, {1, 1});
    // A zero pivot in a padding column comes after every real one.
    const TensorType batch_index(ElementType::kS32, {nb});
    info = b.select(b.compare(info, b.constant_splat_int(k, batch_index), "GT"), b.constant_splat_int(0, batch_index),
                    info);
  }
  return {b.reshape(lu, a.dims()), b.reshape(pivots, pivot_type.dims), b.reshape(perm, perm_type.dims),
          b.reshape(info, batch)};
}

hlo::Value pivots_to_perm(hlo::Builder& b, const hlo::Value& pivots, int64_t m) {
  const std::vector<int64_t> batch(pivots.dims().begin(), pivots.dims().end() - 1);
  const int64_t k = pivots.dims().back(), nb = count(batch);
  const TensorType perm_type(ElementType::kS32, with(batch, {m}));
  if (nb == 0 || k == 0 || m == 0) return b.iota(perm_type, perm_type.rank() - 1);
  hlo::Value piv = b.reshape(convert_to(b, pivots, ElementType::kS32), {nb, k});
  std::vector<hlo::Value> out = b.while_loop(
      {i32(b, 0), b.iota(TensorType(ElementType::kS32, {nb, m, 1}), 1), piv},
      [k](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        return std::vector<hlo::Value>{c.compare(v[0], i32(c, k), "LT")};
      },
      [nb, m](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        const TensorType batch_index(ElementType::kS32, {nb});
        hlo::Value p = c.reshape(c.dynamic_slice(v[2], {i32(c, 0), v[0]}, {nb, 1}), {nb});
        p = c.clamp(i32(c, 0), c.subtract(p, c.constant_splat_int(1, batch_index)), i32(c, m - 1));
        return std::vector<hlo::Value>{c.add(v[0], i32(c, 1)), swap_rows(c, v[1], v[0], p), v[2]};
      });
  return b.reshape(out[1], perm_type.dims);
}

std::tuple<hlo::Value, hlo::Value, hlo::Value> lower_lu_unpack(hlo::Builder& b, const hlo::Value& lu,
                                                               const hlo::Value& perm) {
  const int64_t r = lu.rank(), m = lu.dims()[r - 2], n = lu.dims()[r - 1], k = std::min(m, n);
  std::vector<int64_t> starts(r, 0), strides(r, 1), l_limits = lu.dims(), u_limits = lu.dims();
  l_limits[r - 1] = k;
  u_limits[r - 2] = k;
  hlo::Value l = b.slice(lu, starts, l_limits, strides);
  l = b.add(matrix::keep_triangle(b, l, false, -1), matrix::identity(b, lu.dtype(), l.dims()));
  hlo::Value u = matrix::keep_triangle(b, b.slice(lu, starts, u_limits, strides), true, 0);
  return {permutation_matrix(b, perm, lu.dtype()), l, u};
}

hlo::Value lower_lu_solve(hlo::Builder& b, const hlo::Value& lu, const hlo::Value& perm, const hlo::Value& rhs,
                          bool left, bool adjoint) {
  if (!left) {
    // X A = B  <=>  A^H X^H = B^H (and X A^H = B <=> A X^H = B^H).
    hlo::Value xh = lower_lu_solve(b, lu, perm, matrix::transpose(b, rhs, true), true, !adjoint);
    return matrix::transpose(b, xh, true);
  }
  const std::vector<int64_t> batch =
      broadcast_shapes(matrix::batch_dims(lu), matrix::batch_dims(rhs), "aten::linalg_lu_solve");
  hlo::Value f = matrix::broadcast_batch(b, lu, batch);
  hlo::Value y = matrix::broadcast_batch(b, rhs, batch);
  if (is_empty(f) || is_empty(y)) return b.constant_splat(0, y.type());
  hlo::Value p = permutation_matrix(b, broadcast_to(b, perm, with(batch, {f.dims().back()})), f.dtype());
  using hlo::Transpose;
  if (!adjoint) {
    // L U X = P^T B
    y = matrix::matmul(b, matrix::transpose(b, p, false), y);
    y = b.triangular_solve(f, y, true, /*lower=*/true, /*unit=*/true, Transpose::kNoTranspose);
    return b.triangular_solve(f, y, true, /*lower=*/false, /*unit=*/false, Transpose::kNoTranspose);
  }
  // U^H L^H P^T X = B
  y = b.triangular_solve(f, y, true, /*lower=*/false, /*unit=*/false, Transpose::kAdjoint);
  y = b.triangular_solve(f, y, true, /*lower=*/true, /*unit=*/true, Transpose::kAdjoint);
  return matrix::matmul(b, p, y);
}

namespace {

// -1 where the pivots make an odd permutation, 1 otherwise, in `dtype`.
hlo::Value permutation_sign(hlo::Builder& b, const hlo::Value& pivots, ElementType dtype) {
  const TensorType piv_type(ElementType::kS32, pivots.dims());
  hlo::Value identity = b.add(b.iota(piv_type, pivots.rank() - 1), b.constant_splat_int(1, piv_type));
  hlo::Value swapped = b.compare(convert_to(b, pivots, ElementType::kS32), identity, "NE");
  hlo::Value swaps = matrix::reduce(b, b.select(swapped, b.constant_splat_int(1, piv_type),
                                                b.constant_splat_int(0, piv_type)),
                                    pivots.rank() - 1, &hlo::Builder::add, 0);
  const TensorType batch_i(ElementType::kS32, swaps.dims());
  hlo::Value odd = b.compare(b.remainder(swaps, b.constant_splat_int(2, batch_i)), b.constant_splat_int(1, batch_i),
                             "EQ");
  const TensorType out(dtype, swaps.dims());
  return b.select(odd, b.constant_splat(-1, out), b.constant_splat(1, out));
}

}  // namespace

hlo::Value lower_det_from_lu(hlo::Builder& b, const hlo::Value& lu, const hlo::Value& pivots) {
  hlo::Value diag = matrix::diagonal(b, lu);
  hlo::Value product = matrix::reduce(b, diag, diag.rank() - 1, &hlo::Builder::multiply, 1);
  return b.multiply(permutation_sign(b, pivots, lu.dtype()), product);
}

std::pair<hlo::Value, hlo::Value> lower_slogdet_from_lu(hlo::Builder& b, const hlo::Value& lu,
                                                        const hlo::Value& pivots) {
  hlo::Value diag = matrix::diagonal(b, lu);
  hlo::Value magnitude = b.abs(diag);
  hlo::Value unit;
  if (is_complex(diag.dtype())) {
    hlo::Value nonzero = b.compare(magnitude, b.constant_splat(0, magnitude.type()), "NE");
    unit = b.select(nonzero, b.divide(diag, b.complex(magnitude, b.constant_splat(0, magnitude.type()))),
                    b.constant_splat(0, diag.type()));
  } else {
    unit = b.sign(diag);
  }
  const int64_t last = diag.rank() - 1;
  hlo::Value sign =
      b.multiply(permutation_sign(b, pivots, lu.dtype()), matrix::reduce(b, unit, last, &hlo::Builder::multiply, 1));
  return {sign, matrix::reduce(b, b.log(magnitude), last, &hlo::Builder::add, 0)};
}

}  // namespace torch_tpu::ops
