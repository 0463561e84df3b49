#include "ops/linalg/lstsq.h"

#include <algorithm>
#include <vector>

#include "ops/linalg/jacobi.h"
#include "ops/linalg/matrix_util.h"
#include "ops/linalg/qr.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;

bool has_zero_dim(const std::vector<int64_t>& dims) {
  return std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d == 0; });
}

std::vector<int64_t> with_tail(std::vector<int64_t> dims, std::initializer_list<int64_t> tail) {
  dims.insert(dims.end(), tail);
  return dims;
}

// x [..., r, c] restricted to rows [begin, end).
hlo::Value rows(hlo::Builder& b, const hlo::Value& x, int64_t begin, int64_t end) {
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  starts[x.rank() - 2] = begin;
  limits[x.rank() - 2] = end;
  return b.slice(x, starts, limits, strides);
}

// The squared norms of x's columns [..., c], in x's real type.
hlo::Value column_norms2(hlo::Builder& b, const hlo::Value& x) {
  return matrix::reduce(b, matrix::abs_squared(b, x), x.rank() - 2, &hlo::Builder::add, 0);
}

// LAPACK's trtrs info: the 1-based index of the first exactly zero
// diagonal entry of the triangular r [..., n, n], else 0 (i32 [...]).
hlo::Value first_zero_diagonal(hlo::Builder& b, const hlo::Value& r) {
  hlo::Value d = matrix::diagonal(b, r);
  const int64_t n = d.dims().back();
  const TensorType index_type(ElementType::kS32, d.dims());
  hlo::Value zero = b.compare(d, b.constant_splat(0, d.type()), "EQ");
  hlo::Value position = b.add(b.iota(index_type, d.rank() - 1), b.constant_splat_int(1, index_type));
  hlo::Value first = matrix::reduce(b, b.select(zero, position, b.constant_splat_int(n + 1, index_type)),
                                    d.rank() - 1, &hlo::Builder::minimum_in_reduction, static_cast<double>(n + 1));
  const TensorType batch_type(ElementType::kS32, first.dims());
  return b.select(b.compare(first, b.constant_splat_int(n + 1, batch_type), "EQ"),
                  b.constant_splat_int(0, batch_type), first);
}

LeastSquares empty_problem(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs) {
  const std::vector<int64_t> batch = matrix::batch_dims(a);
  const int64_t m = a.dims()[a.rank() - 2], n = a.dims()[a.rank() - 1], k = rhs.dims().back();
  const ElementType real = real_part_type(a.dtype());
  return {b.constant_splat(0, TensorType(a.dtype(), with_tail(batch, {n, k}))), column_norms2(b, rhs),
          b.constant_splat_int(0, TensorType(ElementType::kS64, batch)),
          b.constant_splat(0, TensorType(real, with_tail(batch, {std::min(m, n)}))),
          b.constant_splat_int(0, TensorType(ElementType::kS32, batch))};
}

}  // namespace

LeastSquares lower_lstsq_qr(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs) {
  if (has_zero_dim(a.dims()) || has_zero_dim(rhs.dims())) return empty_problem(b, a, rhs);
  const int64_t m = a.dims()[a.rank() - 2], n = a.dims()[a.rank() - 1];
  LeastSquares out = empty_problem(b, a, rhs);
  if (m >= n) {
    // A = Q R: X = R^-1 (Q^H B)[:n]; the rows below n are the residual.
    auto [packed, tau] = lower_geqrf(b, a);
    hlo::Value qhb = lower_apply_householder(b, packed, tau, rhs, /*left=*/true, /*adjoint=*/true);
    hlo::Value r = matrix::keep_triangle(b, rows(b, packed, 0, n), /*upper=*/true, 0);
    out.solution = b.triangular_solve(r, rows(b, qhb, 0, n), /*left_side=*/true, /*lower=*/false,
                                      /*unit_diagonal=*/false, hlo::Transpose::kNoTranspose);
    out.residuals = column_norms2(b, rows(b, qhb, n, m));
    out.info = first_zero_diagonal(b, r);
    return out;
  }
  // Underdetermined: A^H = Q R, so A = R^H Q^H and the minimum-norm X is
  // Q [R^-H B; 0].
  auto [packed, tau] = lower_geqrf(b, matrix::transpose(b, a, true));
  hlo::Value r = matrix::keep_triangle(b, rows(b, packed, 0, m), /*upper=*/true, 0);
  hlo::Value z = b.triangular_solve(r, rhs, /*left_side=*/true, /*lower=*/false, /*unit_diagonal=*/false,
                                    hlo::Transpose::kAdjoint);
  std::vector<int64_t> no_pad(z.rank(), 0), high(z.rank(), 0);
  high[z.rank() - 2] = n - m;
  z = b.pad(z, b.constant_splat(0, TensorType::scalar(z.dtype())), no_pad, high, no_pad);
  out.solution = lower_apply_householder(b, packed, tau, z, /*left=*/true, /*adjoint=*/false);
  out.residuals = b.constant_splat(0, out.residuals.type());
  out.info = first_zero_diagonal(b, r);
  return out;
}

LeastSquares lower_lstsq_svd(hlo::Builder& b, const hlo::Value& a, const hlo::Value& rhs, double rcond) {
  if (has_zero_dim(a.dims()) || has_zero_dim(rhs.dims())) return empty_problem(b, a, rhs);
  Svd svd = lower_svd(b, a, /*full_matrices=*/false);
  const std::vector<int64_t>& s_dims = svd.s.dims();
  const int64_t last = svd.s.rank() - 1;
  // Singular values are sorted: the first is the largest.
  std::vector<int64_t> starts(svd.s.rank(), 0), limits = s_dims, strides(svd.s.rank(), 1);
  limits[last] = 1;
  hlo::Value largest = b.slice(svd.s, starts, limits, strides);
  std::vector<int64_t> all_dims;
  for (int64_t d = 0; d < svd.s.rank(); ++d) all_dims.push_back(d);
  hlo::Value cut = b.broadcast_in_dim(b.multiply(largest, b.constant_splat(rcond, largest.type())), s_dims, all_dims);
  hlo::Value keep = b.compare(svd.s, cut, "GT");
  hlo::Value inverse = b.select(keep, b.divide(b.constant_splat(1, svd.s.type()), svd.s),
                                b.constant_splat(0, svd.s.type()));
  hlo::Value uhb = matrix::matmul(b, matrix::transpose(b, svd.u, true), rhs);
  // inverse [..., kk] scales the rows of U^H B [..., kk, k].
  hlo::Value scaled =
      b.multiply(uhb, b.broadcast_in_dim(matrix::from_real(b, inverse, a.dtype()), uhb.dims(), all_dims));
  LeastSquares out;
  out.solution = matrix::matmul(b, matrix::transpose(b, svd.vh, true), scaled);
  out.residuals = column_norms2(b, b.subtract(rhs, matrix::matmul(b, a, out.solution)));
  out.rank = matrix::reduce(b, b.convert(keep, ElementType::kS64), last, &hlo::Builder::add, 0);
  out.singular_values = svd.s;
  out.info = svd.info;
  return out;
}

}  // namespace torch_tpu::ops
