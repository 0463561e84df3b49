#include "ops/linalg/cholesky.h"

#include <vector>

#include "ops/linalg/matrix_util.h"

namespace torch_tpu::ops {

namespace {

using hlo::Transpose;

bool is_empty(const hlo::Value& x) {
  for (int64_t d : x.dims()) {
    if (d == 0) return true;
  }
  return false;
}

// op(a) x = rhs or x op(a) = rhs with equal batch dims; XLA is not asked
// to solve empty systems.
hlo::Value solve(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs, bool left, bool lower, bool unit,
                 Transpose transpose) {
  if (is_empty(a) || is_empty(rhs)) return b.constant_splat(0, rhs.type());
  return b.triangular_solve(a, rhs, left, lower, unit, transpose);
}

hlo::Value any_nan(hlo::Builder& b, const hlo::Value& x) {
  std::vector<int64_t> all;
  for (int64_t d = 0; d < x.rank(); ++d) all.push_back(d);
  return b.reduce({b.compare(x, x, "NE")}, {b.constant_splat_int(0, hlo::TensorType::scalar(ElementType::kPred))},
                  all, [](hlo::Builder& r, const std::vector<hlo::Value>& v) {
                    return std::vector<hlo::Value>{r.or_(v[0], v[1])};
                  })[0];
}

// LAPACK's info for `a`: the first k whose pivot d_k of the unpivoted
// (Cholesky) elimination of the Hermitian matrix read from the lower
// triangle is not positive, 0 if none (i32, batch shape).
hlo::Value first_bad_pivot(hlo::Builder& b, const hlo::Value& a) {
  const std::vector<int64_t> batch = matrix::batch_dims(a);
  const int64_t n = a.dims().back();
  int64_t nb = 1;
  for (int64_t d : batch) nb *= d;
  hlo::Value lower = matrix::keep_triangle(b, a, false, -1);
  hlo::Value diag = matrix::keep_triangle(b, matrix::keep_triangle(b, a, false, 0), true, 0);
  hlo::Value full = b.add(b.add(lower, matrix::transpose(b, lower, true)), diag);
  full = b.reshape(full, {nb, n, n});
  const hlo::TensorType s32 = hlo::TensorType::scalar(ElementType::kS32);
  std::vector<hlo::Value> out = b.while_loop(
      {b.constant_splat_int(0, s32), full, b.constant_splat_int(0, hlo::TensorType(ElementType::kS32, {nb}))},
      [n](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        return std::vector<hlo::Value>{
            c.compare(v[0], c.constant_splat_int(n, hlo::TensorType::scalar(ElementType::kS32)), "LT")};
      },
      [nb, n](hlo::Builder& c, const std::vector<hlo::Value>& v) {
        const hlo::Value& j = v[0];
        hlo::Value m = v[1], info = v[2];
        hlo::Value zero = c.constant_splat_int(0, hlo::TensorType::scalar(ElementType::kS32));
        hlo::Value d = c.reshape(c.dynamic_slice(m, {zero, j, j}, {nb, 1, 1}), {nb});
        hlo::Value d_re = is_complex(d.dtype()) ? c.real(d) : d;
        hlo::Value bad = c.not_(c.compare(d_re, c.constant_splat(0, d_re.type()), "GT"));
        const hlo::TensorType batch_i(ElementType::kS32, {nb});
        hlo::Value next_j = c.add(j, c.constant_splat_int(1, hlo::TensorType::scalar(ElementType::kS32)));
        hlo::Value step = c.broadcast_in_dim(next_j, {nb}, {});
        info = c.select(c.and_(c.compare(info, c.constant_splat_int(0, batch_i), "EQ"), bad), step, info);
        hlo::Value root = c.sqrt(c.select(bad, c.constant_splat(1, d.type()), d));
        hlo::Value col = c.reshape(c.dynamic_slice(m, {zero, zero, j}, {nb, n, 1}), {nb, n});
        hlo::Value rows = c.iota(hlo::TensorType(ElementType::kS32, {nb, n}), 1);
        hlo::Value below = c.compare(rows, c.broadcast_in_dim(j, {nb, n}, {}), "GT");
        hlo::Value l = c.select(below, c.divide(col, c.broadcast_in_dim(root, {nb, n}, {0})),
                                c.constant_splat(0, col.type()));
        hlo::Value lh = is_complex(l.dtype()) ? c.complex(c.real(l), c.negate(c.imag(l))) : l;
        m = c.subtract(m, c.multiply(c.broadcast_in_dim(l, {nb, n, n}, {0, 1}),
                                     c.broadcast_in_dim(lh, {nb, n, n}, {0, 2})));
        return std::vector<hlo::Value>{next_j, m, info};
      });
  return b.reshape(out[2], batch);
}

}  // namespace

std::pair<hlo::Value, hlo::Value> lower_cholesky_ex(hlo::Builder& b, const hlo::Value& input, bool upper) {
  const std::vector<int64_t> batch = matrix::batch_dims(input);
  // The upper factor reads the upper triangle, as LAPACK's uplo = 'U' does:
  // it is the lower factor of A^H (whose lower triangle that is), transposed.
  hlo::Value a = upper ? matrix::transpose(b, input, true) : input;
  if (is_complex(a.dtype()) && !is_empty(a)) {
    // LAPACK reads only the real part of the diagonal (a Hermitian
    // matrix's is real); XLA would carry an imaginary part into the factor.
    const hlo::Value re = b.real(a), zero = b.constant_splat(0, re.type());
    const hlo::Value on_diagonal = b.compare(matrix::identity(b, re.dtype(), re.dims()), zero, "NE");
    a = b.select(on_diagonal, b.complex(re, zero), a);
  }
  if (is_empty(a)) {
    return {b.constant_splat(0, a.type()), b.constant_splat(0, hlo::TensorType(ElementType::kS32, batch))};
  }
  // XLA leaves the other triangle unspecified.
  hlo::Value l = matrix::keep_triangle(b, b.cholesky(a, /*lower=*/true), false, 0);
  // XLA's factor of a matrix that is not positive-definite is all NaN, which
  // does not say where it failed: only then is the elimination redone here
  // to find the first bad pivot.
  hlo::Value failed = any_nan(b, is_complex(l.dtype()) ? b.real(l) : l);
  hlo::TensorType info_type(ElementType::kS32, batch);
  hlo::Value info = b.case_(b.convert(failed, ElementType::kS32),
                            {[&](hlo::Builder& c, const std::vector<hlo::Value>&) {
                               return std::vector<hlo::Value>{c.constant_splat_int(0, info_type)};
                             },
                             [&](hlo::Builder& c, const std::vector<hlo::Value>&) {
                               return std::vector<hlo::Value>{first_bad_pivot(c, a)};
                             }},
                            {info_type})[0];
  return {upper ? matrix::transpose(b, l, true) : l, info};
}

hlo::Value lower_solve_triangular(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs, bool upper,
                                  bool left, bool unitriangular) {
  hlo::Value x = a, y = rhs;
  matrix::broadcast_batches(b, x, y, "aten::linalg_solve_triangular");
  return solve(b, x, y, left, !upper, unitriangular, Transpose::kNoTranspose);
}

hlo::Value lower_triangular_solve(hlo::Builder& b, const hlo::Value& rhs, const hlo::Value& a, bool upper,
                                  bool transpose, bool unitriangular) {
  hlo::Value x = a, y = rhs;
  matrix::broadcast_batches(b, x, y, "aten::triangular_solve");
  return solve(b, x, y, true, !upper, unitriangular, transpose ? Transpose::kTranspose : Transpose::kNoTranspose);
}

hlo::Value lower_cholesky_solve(hlo::Builder& b, const hlo::Value& rhs, const hlo::Value& factor, bool upper) {
  hlo::Value f = factor, y = rhs;
  matrix::broadcast_batches(b, f, y, "aten::cholesky_solve");
  // A = L L^H: solve L z = b, then L^H x = z; A = U^H U: U^H z = b, U x = z.
  const bool lower = !upper;
  hlo::Value z = solve(b, f, y, true, lower, false, upper ? Transpose::kAdjoint : Transpose::kNoTranspose);
  return solve(b, f, z, true, lower, false, upper ? Transpose::kNoTranspose : Transpose::kAdjoint);
}

hlo::Value lower_cholesky_inverse(hlo::Builder& b, const hlo::Value& factor, bool upper) {
  hlo::Value f = matrix::keep_triangle(b, factor, upper, 0);
  return lower_cholesky_solve(b, matrix::identity(b, f.dtype(), f.dims()), f, upper);
}

}  // namespace torch_tpu::ops
