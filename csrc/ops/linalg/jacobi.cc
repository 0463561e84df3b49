#include "ops/linalg/jacobi.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <vector>

#include "ops/elementwise/unary.h"
#include "ops/indexing/gather_scatter.h"
#include "ops/linalg/matrix_util.h"
#include "ops/linalg/qr.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using Values = std::vector<hlo::Value>;

// Jacobi converges quadratically: 6 - 12 sweeps are typical. The cap only
// ends loops that cannot converge (NaN stops them earlier).
constexpr int64_t kMaxSweeps = 40;

hlo::Value i32(hlo::Builder& b, int64_t v) { return b.constant_splat_int(v, TensorType::scalar(ElementType::kS32)); }

double epsilon(ElementType t) {
  return real_part_type(t) == ElementType::kF64 ? std::numeric_limits<double>::epsilon()
                                                : std::numeric_limits<float>::epsilon();
}

// x [B, ...] sliced to [begin, end) along `axis`.
hlo::Value slice_axis(hlo::Builder& b, const hlo::Value& x, int64_t axis, int64_t begin, int64_t end) {
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  starts[axis] = begin;
  limits[axis] = end;
  return b.slice(x, starts, limits, strides);
}

// The rotation that diagonalizes the Hermitian 2 x 2 blocks
// [[app, apq], [conj(apq), aqq]] of the pairs (p, q) of one round:
// G = [[c, s], [-s u, c u]] with u = conj(apq) / |apq| (1 where apq = 0),
// G^H A G diagonal with diagonal (app - shift, aqq + shift). All [B, n/2].
struct Rotation {
  hlo::Value c, s, shift;  // real
  hlo::Value u;            // apq's type
};

Rotation rotation(hlo::Builder& b, const hlo::Value& app, const hlo::Value& aqq, const hlo::Value& apq) {
  hlo::Value mag = b.abs(apq);
  const TensorType real = mag.type();
  hlo::Value zero = b.constant_splat(0, real), one = b.constant_splat(1, real);
  hlo::Value none = b.compare(mag, zero, "EQ");
  hlo::Value safe = b.select(none, one, mag);
  // Golub & Van Loan's symmetric Schur step on the real block
  // [[app, |apq|], [|apq|, aqq]]: the smaller of the two angles.
  hlo::Value tau = b.divide(b.subtract(aqq, app), b.multiply(b.constant_splat(2, real), safe));
  hlo::Value sign = b.select(b.compare(tau, zero, "GE"), one, b.negate(one));
  hlo::Value t = b.divide(sign, b.add(b.abs(tau), b.sqrt(b.add(one, b.multiply(tau, tau)))));
  t = b.select(none, zero, t);
  hlo::Value c = b.rsqrt(b.add(one, b.multiply(t, t)));
  // u (conj(apq) / |apq|: a sign for real types) turns apq into |apq|.
  hlo::Value u = b.divide(ops::conjugate(b, apq), matrix::from_real(b, safe, apq.dtype()));
  u = b.select(none, b.constant_splat(1, apq.type()), u);
  return Rotation{c, b.multiply(t, c), b.multiply(t, mag), u};
}

// x [B, R, C] with its halves along `axis` (1: rows, 2: columns) rotated
// pairwise: first' = c first - s u second, second' = s first + c u second,
// u conjugated for rows (x -> G^H x) and not for columns (x -> x G).
hlo::Value rotate(hlo::Builder& b, const hlo::Value& x, const Rotation& r, int64_t axis) {
  const int64_t h = x.dims()[axis] / 2;
  hlo::Value first = slice_axis(b, x, axis, 0, h), second = slice_axis(b, x, axis, h, 2 * h);
  const std::vector<int64_t>& dims = first.dims();
  auto spread = [&](const hlo::Value& v) {
    return b.broadcast_in_dim(matrix::from_real(b, v, x.dtype()), dims, {0, axis});
  };
  hlo::Value c = spread(r.c), s = spread(r.s);
  hlo::Value u = b.broadcast_in_dim(axis == 1 ? ops::conjugate(b, r.u) : r.u, dims, {0, axis});
  hlo::Value cu = b.multiply(c, u), su = b.multiply(s, u);
  return b.concatenate({b.subtract(b.multiply(c, first), b.multiply(su, second)),
                        b.add(b.multiply(s, first), b.multiply(cu, second))},
                       axis);
}

// The round-robin step along `axis` (size 2h): index 0 stays, the others
// move one place around the circle of pairs (i, h + i), so n - 1 rounds
// pair every index with every other once.
hlo::Value next_pairing(hlo::Builder& b, const hlo::Value& x, int64_t axis) {
  const int64_t n = x.dims()[axis], h = n / 2;
  if (h < 2) return x;
  Values pieces;
  for (auto [begin, end] : std::vector<std::pair<int64_t, int64_t>>{{0, 1}, {h, h + 1}, {1, h - 1}, {h + 1, n}, {h - 1, h}}) {
    if (end > begin) pieces.push_back(slice_axis(b, x, axis, begin, end));
  }
  return b.concatenate(pieces, axis);
}

// The diagonals [B, h] of x's blocks [:h, :h], [h:, h:] and [:h, h:].
hlo::Value block_diagonal(hlo::Builder& b, const hlo::Value& x, int64_t row, int64_t col) {
  const int64_t h = x.dims()[1] / 2;
  return matrix::diagonal(b, slice_axis(b, slice_axis(b, x, 1, row, row + h), 2, col, col + h));
}

hlo::Value sum_rows(hlo::Builder& b, const hlo::Value& x) { return matrix::reduce(b, x, 1, &hlo::Builder::add, 0); }

// x [B, R, C] padded with zero rows and columns to [B, rows, cols].
hlo::Value pad_to(hlo::Builder& b, const hlo::Value& x, int64_t rows, int64_t cols) {
  return b.pad(x, b.constant_splat(0, TensorType::scalar(x.dtype())), {0, 0, 0},
               {0, rows - x.dims()[1], cols - x.dims()[2]}, {0, 0, 0});
}

// max |x| of each matrix [B], or 1 where that is 0 or not finite, and x
// divided by it: the rotations then neither overflow nor underflow.
std::pair<hlo::Value, hlo::Value> normalize(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value mag = b.abs(x);
  hlo::Value largest = b.reduce({mag}, {b.constant_splat(0, TensorType::scalar(mag.dtype()))}, {1, 2},
                                [](hlo::Builder& r, const Values& v) { return Values{r.maximum_in_reduction(v[0], v[1])}; })[0];
  hlo::Value usable = b.and_(b.is_finite(largest), b.compare(largest, b.constant_splat(0, largest.type()), "GT"));
  hlo::Value scale = b.select(usable, largest, b.constant_splat(1, largest.type()));
  hlo::Value divisor = matrix::from_real(b, b.broadcast_in_dim(scale, x.dims(), {0}), x.dtype());
  return {scale, b.divide(x, divisor)};
}

// True for every batch where `measure` [B] is not above `limit` [B] (NaN
// counts as done, so bad input ends the loop).
hlo::Value all_within(hlo::Builder& b, const hlo::Value& measure, const hlo::Value& limit) {
  hlo::Value within = b.not_(b.compare(measure, limit, "GT"));
  return b.reduce({within}, {b.constant_splat_int(1, TensorType::scalar(ElementType::kPred))}, {0},
                  [](hlo::Builder& r, const Values& v) { return Values{r.and_(v[0], v[1])}; })[0];
}

// `sweep` ((sweep, x, v, done) -> (x, v, done)) repeated until done or
// kMaxSweeps ran; returns (sweeps, x, v, done).
Values sweep_until_done(hlo::Builder& b, const hlo::Value& x, const hlo::Value& v, const hlo::Value& done0,
                        const std::function<Values(hlo::Builder&, const Values&)>& sweep) {
  return b.while_loop(
      {i32(b, 0), x, v, done0},
      [](hlo::Builder& c, const Values& s) {
        return Values{c.and_(c.compare(s[0], i32(c, kMaxSweeps), "LT"), c.not_(s[3]))};
      },
      [&sweep](hlo::Builder& c, const Values& s) {
        Values out = sweep(c, s);
        return Values{c.add(s[0], i32(c, 1)), out[0], out[1], out[2]};
      });
}

// The index of each column of v [B, N, N] after sorting `key` [B, N]
// (ascending, or descending), first `keep` of them: [B, keep] i32.
hlo::Value sorted_order(hlo::Builder& b, const hlo::Value& key, bool descending, int64_t keep) {
  hlo::Value index = b.iota(TensorType(ElementType::kS32, key.dims()), 1);
  const char* direction = descending ? "GT" : "LT";
  Values sorted = b.sort({key, index}, 1, /*is_stable=*/true, [direction](hlo::Builder& r, const Values& v) {
    return Values{r.compare(v[0], v[1], direction)};
  });
  return slice_axis(b, sorted[1], 1, 0, keep);
}

// x's first `rows` rows and the columns `order` [B, k].
hlo::Value take_columns(hlo::Builder& b, const hlo::Value& x, const hlo::Value& order, int64_t rows) {
  hlo::Value top = slice_axis(b, x, 1, 0, rows);
  const int64_t k = order.dims()[1];
  hlo::Value index = b.broadcast_in_dim(order, {x.dims()[0], rows, k}, {0, 2});
  return lower_gather(b, top, index, 2).value;
}

// A zero padding index (when n is odd) never rotates (its off-diagonal
// entries are 0), so its column of the accumulated rotations stays a unit
// vector with its 1 in the last row: true for that column [B, N].
hlo::Value padding_column(hlo::Builder& b, const hlo::Value& v) {
  const int64_t n = v.dims()[1];
  hlo::Value last = b.reshape(slice_axis(b, v, 1, n - 1, n), {v.dims()[0], v.dims()[2]});
  if (is_complex(last.dtype())) last = b.real(last);
  return b.compare(last, b.constant_splat(1, last.type()), "EQ");
}

// Two-sided Jacobi on the Hermitian x [B, N, N], N even: (w [B, N], v).
std::pair<hlo::Value, hlo::Value> jacobi_eigh(hlo::Builder& b, const hlo::Value& x) {
  const int64_t n = x.dims()[1], h = n / 2;
  const std::vector<int64_t> dims = x.dims();
  const TensorType index_type(ElementType::kS32, dims);
  const double eps = epsilon(x.dtype());

  auto off_diagonal_small = [eps, dims, index_type](hlo::Builder& c, const hlo::Value& a) {
    hlo::Value diag = c.compare(c.iota(index_type, 1), c.iota(index_type, 2), "EQ");
    hlo::Value sq = matrix::abs_squared(c, a);
    hlo::Value off = matrix::reduce(c, sum_rows(c, c.select(diag, c.constant_splat(0, sq.type()), sq)), 1,
                                    &hlo::Builder::add, 0);
    hlo::Value total = matrix::reduce(c, sum_rows(c, sq), 1, &hlo::Builder::add, 0);
    return all_within(c, off, c.multiply(c.constant_splat(eps * eps, total.type()), total));
  };

  auto round = [dims, index_type, h](hlo::Builder& c, const Values& s) {
    hlo::Value a = s[1], v = s[2];
    hlo::Value app = block_diagonal(c, a, 0, 0), aqq = block_diagonal(c, a, h, h);
    if (is_complex(a.dtype())) {
      app = c.real(app);
      aqq = c.real(aqq);
    }
    Rotation r = rotation(c, app, aqq, block_diagonal(c, a, 0, h));
    a = rotate(c, rotate(c, a, r, 1), r, 2);
    // The pairs' entries are exactly what the rotation makes them.
    hlo::Value rows = c.iota(index_type, 1), cols = c.iota(index_type, 2);
    hlo::Value hh = c.constant_splat_int(h, index_type);
    hlo::Value pair = c.or_(c.compare(cols, c.add(rows, hh), "EQ"), c.compare(rows, c.add(cols, hh), "EQ"));
    hlo::Value diag = c.concatenate({c.subtract(app, r.shift), c.add(aqq, r.shift)}, 1);
    a = c.select(pair, c.constant_splat(0, a.type()),
                 c.select(c.compare(rows, cols, "EQ"), c.broadcast_in_dim(matrix::from_real(c, diag, a.dtype()), dims, {0, 2}), a));
    v = rotate(c, v, r, 2);
    a = next_pairing(c, next_pairing(c, a, 1), 2);
    v = next_pairing(c, v, 2);
    return Values{c.add(s[0], i32(c, 1)), a, v};
  };

  auto sweep = [&round, &off_diagonal_small, n](hlo::Builder& c, const Values& s) {
    Values out = c.while_loop(
        {i32(c, 0), s[1], s[2]},
        [n](hlo::Builder& cc, const Values& r) { return Values{cc.compare(r[0], i32(cc, n - 1), "LT")}; }, round);
    return Values{out[1], out[2], off_diagonal_small(c, out[1])};
  };

  hlo::Value v0 = matrix::identity(b, x.dtype(), dims);
  Values out = sweep_until_done(b, x, v0, off_diagonal_small(b, x), sweep);
  hlo::Value w = matrix::diagonal(b, out[1]);
  if (is_complex(w.dtype())) w = b.real(w);
  return {w, out[2]};
}

// One-sided Jacobi (Hestenes) on the columns of x [B, N, N], N even:
// x V has orthogonal columns. Returns (x V, V).
std::pair<hlo::Value, hlo::Value> jacobi_orthogonalize(hlo::Builder& b, const hlo::Value& x) {
  const int64_t batch = x.dims()[0], n = x.dims()[1], h = n / 2;
  const double tolerance = std::sqrt(static_cast<double>(n)) * epsilon(x.dtype());
  const TensorType cos_type(real_part_type(x.dtype()), {batch});

  auto round = [h](hlo::Builder& c, const Values& s) {
    hlo::Value w = s[1], v = s[2], largest_cos = s[3];
    hlo::Value left = slice_axis(c, w, 2, 0, h), right = slice_axis(c, w, 2, h, 2 * h);
    hlo::Value alpha = sum_rows(c, matrix::abs_squared(c, left));
    hlo::Value beta = sum_rows(c, matrix::abs_squared(c, right));
    hlo::Value gamma = sum_rows(c, c.multiply(ops::conjugate(c, left), right));
    hlo::Value norms = c.sqrt(c.multiply(alpha, beta));
    hlo::Value zero = c.constant_splat(0, norms.type());
    hlo::Value cos = c.select(c.compare(norms, zero, "GT"), c.divide(c.abs(gamma), norms), zero);
    largest_cos = c.maximum(largest_cos, matrix::reduce(c, cos, 1, &hlo::Builder::maximum_in_reduction, 0));
    Rotation r = rotation(c, alpha, beta, gamma);
    w = next_pairing(c, rotate(c, w, r, 2), 2);
    v = next_pairing(c, rotate(c, v, r, 2), 2);
    return Values{c.add(s[0], i32(c, 1)), w, v, largest_cos};
  };

  auto sweep = [&round, n, tolerance, cos_type](hlo::Builder& c, const Values& s) {
    Values out = c.while_loop(
        {i32(c, 0), s[1], s[2], c.constant_splat(0, cos_type)},
        [n](hlo::Builder& cc, const Values& r) { return Values{cc.compare(r[0], i32(cc, n - 1), "LT")}; }, round);
    return Values{out[1], out[2], all_within(c, out[3], c.constant_splat(tolerance, cos_type))};
  };

  hlo::Value not_done = b.constant_splat_int(0, TensorType::scalar(ElementType::kPred));
  Values out = sweep_until_done(b, x, matrix::identity(b, x.dtype(), x.dims()), not_done, sweep);
  return {out[1], out[2]};
}

// The Hermitian matrix that the lower (or upper) triangle of x describes;
// the diagonal's imaginary parts are ignored, as LAPACK does.
hlo::Value hermitian_from_triangle(hlo::Builder& b, const hlo::Value& x, bool upper) {
  hlo::Value strict = matrix::keep_triangle(b, x, upper, upper ? 1 : -1);
  hlo::Value diag = matrix::keep_triangle(b, matrix::keep_triangle(b, x, true, 0), false, 0);
  if (is_complex(x.dtype())) diag = matrix::from_real(b, b.real(diag), x.dtype());
  return b.add(b.add(strict, matrix::transpose(b, strict, true)), diag);
}

// 1 for each matrix of x [B, R, C] with a NaN or infinite entry, else 0
// (i32 [B]): the results are then meaningless, and the ATen glue raises.
hlo::Value non_finite(hlo::Builder& b, const hlo::Value& x) {
  hlo::Value finite = b.is_finite(is_complex(x.dtype()) ? b.add(b.real(x), b.imag(x)) : x);
  hlo::Value all = b.reduce({finite}, {b.constant_splat_int(1, TensorType::scalar(ElementType::kPred))}, {1, 2},
                            [](hlo::Builder& r, const Values& v) { return Values{r.and_(v[0], v[1])}; })[0];
  return b.convert(b.not_(all), ElementType::kS32);
}

// 1 where a matrix of x [batch, m, n] holds a NaN, else 0 (i32 [batch]).
hlo::Value holds_nan(hlo::Builder& b, const hlo::Value& x) {
  auto is_nan = [&](const hlo::Value& v) { return b.compare(v, v, "NE"); };
  // A part-wise test: inf - inf*j sums to NaN but holds none.
  hlo::Value nan = is_complex(x.dtype()) ? b.or_(is_nan(b.real(x)), is_nan(b.imag(x))) : is_nan(x);
  hlo::Value any = b.reduce({nan}, {b.constant_splat_int(0, TensorType::scalar(ElementType::kPred))}, {1, 2},
                            [](hlo::Builder& r, const Values& v) { return Values{r.or_(v[0], v[1])}; })[0];
  return b.convert(any, ElementType::kS32);
}

// `value` (batch dims first) with the matrices whose `flag` (i32 [batch]) is
// set replaced by NaN: what LAPACK returns for input it cannot iterate on.
hlo::Value nan_where(hlo::Builder& b, const hlo::Value& flag, const hlo::Value& value) {
  std::vector<int64_t> batch_dims(flag.rank());
  std::iota(batch_dims.begin(), batch_dims.end(), 0);
  hlo::Value set = b.broadcast_in_dim(b.compare(flag, b.constant_splat_int(0, flag.type()), "NE"), value.dims(),
                                      batch_dims);
  const double nan = std::numeric_limits<double>::quiet_NaN();
  hlo::Value nans = is_complex(value.dtype()) ? b.constant_splat_complex(nan, nan, value.type())
                                              : b.constant_splat(nan, value.type());
  return b.select(set, nans, value);
}

bool has_zero_dim(const std::vector<int64_t>& dims) {
  return std::any_of(dims.begin(), dims.end(), [](int64_t d) { return d == 0; });
}

std::vector<int64_t> with_tail(const std::vector<int64_t>& batch, std::initializer_list<int64_t> tail) {
  std::vector<int64_t> dims = batch;
  dims.insert(dims.end(), tail);
  return dims;
}

// The SVD of a tall x [B, m, n], m >= n, as (U, S, V) with x = U S V^H.
Values svd_tall(hlo::Builder& b, const hlo::Value& x, bool full_matrices) {
  const int64_t batch = x.dims()[0], m = x.dims()[1], n = x.dims()[2], padded = n + n % 2;
  auto [scale, scaled] = normalize(b, x);
  // Rotating the n x n R of x = Q R is cheaper than rotating x.
  auto [q, r] = lower_qr(b, scaled, full_matrices);
  r = slice_axis(b, r, 1, 0, n);
  auto [w, v] = jacobi_orthogonalize(b, pad_to(b, r, padded, padded));
  hlo::Value sigma = b.sqrt(sum_rows(b, matrix::abs_squared(b, w)));
  if (padded != n) {
    sigma = b.select(padding_column(b, v), b.constant_splat(-1, sigma.type()), sigma);
  }
  hlo::Value order = sorted_order(b, sigma, /*descending=*/true, n);
  hlo::Value s = b.multiply(lower_gather(b, sigma, order, 1).value, b.broadcast_in_dim(scale, {batch, n}, {0}));
  w = take_columns(b, w, order, n);
  v = take_columns(b, v, order, n);
  // w = U_r diag(S) with orthogonal columns: its QR's Q (with R's diagonal
  // phases) is U_r, orthonormal even where S has zeros.
  auto [q2, r2] = lower_qr(b, w, false);
  hlo::Value d = matrix::diagonal(b, r2);
  hlo::Value mag = b.abs(d);
  hlo::Value phase = b.select(b.compare(mag, b.constant_splat(0, mag.type()), "EQ"), b.constant_splat(1, d.type()),
                              b.divide(d, matrix::from_real(b, mag, d.dtype())));
  hlo::Value u_r = b.multiply(q2, b.broadcast_in_dim(phase, {batch, n, n}, {0, 2}));
  hlo::Value u = matrix::matmul(b, slice_axis(b, q, 2, 0, n), u_r);
  if (full_matrices && m > n) u = b.concatenate({u, slice_axis(b, q, 2, n, m)}, 2);
  return {u, s, v};
}

}  // namespace

Eigh lower_eigh(hlo::Builder& b, const hlo::Value& a, bool upper) {
  const std::vector<int64_t> batch = matrix::batch_dims(a);
  const int64_t n = a.dims().back(), padded = n + n % 2;
  const TensorType w_type(real_part_type(a.dtype()), with_tail(batch, {n}));
  const TensorType info_type(ElementType::kS32, batch);
  if (has_zero_dim(a.dims())) {
    return {b.constant_splat(0, w_type), b.constant_splat(0, a.type()), b.constant_splat_int(0, info_type)};
  }
  hlo::Value x = matrix::flatten_batch(b, hermitian_from_triangle(b, a, upper));
  const int64_t flat = x.dims()[0];
  auto [scale, scaled] = normalize(b, x);
  auto [w, v] = jacobi_eigh(b, pad_to(b, scaled, padded, padded));
  if (padded != n) {
    w = b.select(padding_column(b, v), b.constant_splat(std::numeric_limits<double>::infinity(), w.type()), w);
  }
  hlo::Value order = sorted_order(b, w, /*descending=*/false, n);
  w = b.multiply(lower_gather(b, w, order, 1).value, b.broadcast_in_dim(scale, {flat, n}, {0}));
  v = take_columns(b, v, order, n);
  // A matrix holding NaN or an infinity gives NaN results; info tells NaN
  // (2), which LAPACK typically fails on, from infinities only (1).
  hlo::Value non_finite_matrix = b.reshape(non_finite(b, x), batch);
  hlo::Value info = b.add(non_finite_matrix, b.reshape(holds_nan(b, x), batch));
  return {nan_where(b, non_finite_matrix, b.reshape(w, w_type.dims)),
          nan_where(b, non_finite_matrix, b.reshape(v, a.dims())), info};
}

Svd lower_svd(hlo::Builder& b, const hlo::Value& a, bool full_matrices) {
  const std::vector<int64_t> batch = matrix::batch_dims(a);
  const int64_t m = a.dims()[a.rank() - 2], n = a.dims()[a.rank() - 1], k = std::min(m, n);
  const std::vector<int64_t> u_dims = with_tail(batch, {m, full_matrices ? m : k});
  const std::vector<int64_t> vh_dims = with_tail(batch, {full_matrices ? n : k, n});
  const TensorType s_type(real_part_type(a.dtype()), with_tail(batch, {k}));
  const TensorType info_type(ElementType::kS32, batch);
  if (has_zero_dim(a.dims())) {
    return {matrix::identity(b, a.dtype(), u_dims), b.constant_splat(0, s_type),
            matrix::identity(b, a.dtype(), vh_dims), b.constant_splat_int(0, info_type)};
  }
  hlo::Value x = matrix::flatten_batch(b, a);
  // 2 where a matrix holds NaN (LAPACK fails), 1 where it holds only
  // infinities (LAPACK returns NaN), else 0.
  hlo::Value non_finite_matrix = b.reshape(non_finite(b, x), batch);
  hlo::Value info = b.add(non_finite_matrix, b.reshape(holds_nan(b, x), batch));
  auto finish = [&](const hlo::Value& u, const hlo::Value& s, const hlo::Value& vh) {
    return Svd{nan_where(b, non_finite_matrix, b.reshape(u, u_dims)),
               nan_where(b, non_finite_matrix, b.reshape(s, s_type.dims)),
               nan_where(b, non_finite_matrix, b.reshape(vh, vh_dims)), info};
  };
  if (m >= n) {
    Values r = svd_tall(b, x, full_matrices);
    return finish(r[0], r[1], matrix::transpose(b, r[2], true));
  }
  // A^H = U' S V'^H, so A = V' S U'^H.
  Values r = svd_tall(b, matrix::transpose(b, x, true), full_matrices);
  return finish(r[2], r[1], matrix::transpose(b, r[0], true));
}

}  // namespace torch_tpu::ops
