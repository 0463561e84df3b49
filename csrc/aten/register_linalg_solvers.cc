// ATen glue for the factorizations and solvers: Cholesky (linalg_cholesky_ex,
// cholesky, _cholesky_solve_helper, cholesky_inverse), triangular solves
// (linalg_solve_triangular, triangular_solve) and LU with partial pivoting
// (linalg_lu_factor_ex, linalg_lu, lu_unpack, linalg_lu_solve,
// _linalg_solve_ex, linalg_inv_ex, _linalg_det, _linalg_slogdet). The
// user-facing torch.linalg functions are composite over these. Errors that
// depend on values (a singular matrix, one not positive-definite) come from
// the `info` outputs, which ATen checks with a sync as it does on CUDA.
// Lowerings: csrc/ops/linalg/cholesky.cc and lu.cc.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/empty.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/lazy_bits.h"
#include "aten/linalg_glue.h"
#include "aten/result_layout.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "ops/linalg/cholesky.h"
#include "ops/linalg/lu.h"
#include "ops/linalg/matrix_util.h"

namespace torch_tpu::aten {

namespace {

using namespace linalg;

// ---- Cholesky ---------------------------------------------------------------------

std::tuple<Tensor, Tensor> tpu_cholesky_ex(const Tensor& self, bool upper, bool check_errors) {
  check_matrix(self, "linalg.cholesky", "A", true);
  auto r = run_linalg("aten::linalg_cholesky_ex", flags({upper}), {self}, [upper](hlo::Builder& b, const Values& t) {
    auto [l, info] = ops::lower_cholesky_ex(b, t[0], upper);
    return Values{l, info};
  });
  if (check_errors) at::_linalg_check_errors(r[1], "linalg.cholesky_ex", self.dim() == 2);
  return {column_major(r[0]), r[1]};
}

std::tuple<Tensor&, Tensor&> tpu_cholesky_ex_out(const Tensor& self, bool upper, bool check_errors, Tensor& l,
                                             Tensor& info) {
  auto [lv, iv] = tpu_cholesky_ex(self, upper, check_errors);
  write(l, lv);
  write(info, iv);
  return {l, info};
}

Tensor tpu_cholesky(const Tensor& self, bool upper) {
  auto [l, info] = tpu_cholesky_ex(self, upper, false);
  at::_linalg_check_errors(info, "cholesky", self.dim() == 2);
  return l;
}

Tensor& tpu_cholesky_out(const Tensor& self, bool upper, Tensor& out) {
  write_castable(out, tpu_cholesky(self, upper));  // not structured in ATen
  return out;
}

Tensor tpu_cholesky_solve_helper(const Tensor& self, const Tensor& a, bool upper) {
  check_matrix(a, "cholesky_solve", "A", true);
  check_same_dtype(a, self, "cholesky_solve");
  // Column-major, as LAPACK's result and PyTorch's shape function are.
  return column_major(run_linalg("aten::_cholesky_solve_helper", flags({upper}), {self, a},
                                 [upper](hlo::Builder& b, const Values& t) {
                                   return Values{ops::lower_cholesky_solve(b, t[0], t[1], upper)};
                                 })
                          .at(0));
}

Tensor& tpu_cholesky_solve_helper_out(const Tensor& self, const Tensor& a, bool upper, Tensor& out) {
  write(out, tpu_cholesky_solve_helper(self, a, upper));
  return out;
}

Tensor tpu_cholesky_inverse(const Tensor& self, bool upper) {
  check_matrix(self, "cholesky_inverse", "input", true);
  return column_major(run_linalg("aten::cholesky_inverse", flags({upper}), {self},
                                 [upper](hlo::Builder& b, const Values& t) {
                                   return Values{ops::lower_cholesky_inverse(b, t[0], upper)};
                                 })
                          .at(0));
}

Tensor& tpu_cholesky_inverse_out(const Tensor& self, bool upper, Tensor& out) {
  write_castable(out, tpu_cholesky_inverse(self, upper));
  return out;
}

// ---- triangular solves ------------------------------------------------------------

Tensor tpu_solve_triangular(const Tensor& a, const Tensor& rhs, bool upper, bool left, bool unitriangular) {
  check_matrix(a, "linalg.solve_triangular", "A", true);
  check_matrix(rhs, "linalg.solve_triangular", "B", false);
  check_same_dtype(a, rhs, "linalg.solve_triangular");
  const int64_t n = a.size(-1), shared = left ? rhs.size(-2) : rhs.size(-1);
  TORCH_CHECK(n == shared, "linalg.solve_triangular: Incompatible shapes of A and B for the equation ",
              left ? "AX = B" : "XA = B", " (", a.size(-2), "x", n, " and ", rhs.size(-2), "x", rhs.size(-1), ")");
  // PyTorch lets lazily conjugated / negated views through to this op.
  return column_major(run_linalg("aten::linalg_solve_triangular", flags({upper, left, unitriangular}),
                                 {without_lazy_bits(a), without_lazy_bits(rhs)},
                                 [upper, left, unitriangular](hlo::Builder& b, const Values& t) {
                                   return Values{ops::lower_solve_triangular(b, t[0], t[1], upper, left,
                                                                             unitriangular)};
                                 })
                          .at(0));
}

Tensor& tpu_solve_triangular_out(const Tensor& a, const Tensor& rhs, bool upper, bool left, bool unitriangular,
                             Tensor& out) {
  write(out, tpu_solve_triangular(a, rhs, upper, left, unitriangular));
  return out;
}

std::tuple<Tensor, Tensor> tpu_triangular_solve(const Tensor& self, const Tensor& a, bool upper, bool transpose,
                                            bool unitriangular) {
  TORCH_CHECK(self.dim() >= 2, "torch.triangular_solve: Expected b to have at least 2 dimensions, but it has ",
              self.dim(), " dimensions instead");
  TORCH_CHECK(a.dim() >= 2, "torch.triangular_solve: Expected A to have at least 2 dimensions, but it has ",
              a.dim(), " dimensions instead");
  check_matrix(a, "triangular_solve", "A", true);
  check_same_dtype(a, self, "triangular_solve");
  TORCH_CHECK(a.size(-1) == self.size(-2), "Incompatible matrix sizes for triangular_solve: each A matrix is ",
              a.size(-2), " by ", a.size(-1), " but each b matrix is ", self.size(-2), " by ", self.size(-1));
  auto r = run_linalg("aten::triangular_solve", flags({upper, transpose, unitriangular}), {self, a},
               [upper, transpose, unitriangular](hlo::Builder& b, const Values& t) {
                 hlo::Value x = ops::lower_triangular_solve(b, t[0], t[1], upper, transpose, unitriangular);
                 // The coefficient comes back broadcast to the solution's batch.
                 std::vector<int64_t> dims(x.dims().begin(), x.dims().end() - 2);
                 dims.push_back(t[1].dims()[t[1].rank() - 2]);
                 dims.push_back(t[1].dims()[t[1].rank() - 1]);
                 std::vector<int64_t> bdims;
                 for (int64_t d = 0; d < t[1].rank(); ++d) bdims.push_back(d + x.rank() - t[1].rank());
                 return Values{x, b.broadcast_in_dim(t[1], dims, bdims)};
               });
  return {column_major(r[0]), column_major(r[1])};
}

std::tuple<Tensor&, Tensor&> tpu_triangular_solve_out(const Tensor& self, const Tensor& a, bool upper, bool transpose,
                                                  bool unitriangular, Tensor& x, Tensor& m) {
  auto [xv, mv] = tpu_triangular_solve(self, a, upper, transpose, unitriangular);
  write(x, xv);
  write(m, mv);
  return {x, m};
}

// ---- LU -----------------------------------------------------------------------------

std::tuple<Tensor, Tensor, Tensor> tpu_lu_factor_ex(const Tensor& a, bool pivot, bool check_errors) {
  check_matrix(a, "torch.linalg.lu_factor", "A", false);
  TORCH_CHECK(pivot, "linalg.lu_factor: LU without pivoting is not implemented on the CPU");
  auto r = run_linalg("aten::linalg_lu_factor_ex", "", {a}, [](hlo::Builder& b, const Values& t) {
    ops::LuFactors f = ops::lower_lu_factor(b, t[0]);
    return Values{f.lu, f.pivots, f.info};
  });
  if (check_errors) at::_linalg_check_errors(r[2], "torch.linalg.lu_factor_ex", a.dim() == 2);
  return {column_major(r[0]), r[1], r[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> tpu_lu_factor_ex_out(const Tensor& a, bool pivot, bool check_errors, Tensor& lu,
                                                       Tensor& pivots, Tensor& info) {
  auto [l, p, i] = tpu_lu_factor_ex(a, pivot, check_errors);
  write(lu, l);
  write(pivots, p);
  write(info, i);
  return {lu, pivots, info};
}

std::tuple<Tensor, Tensor, Tensor> tpu_linalg_lu(const Tensor& a, bool pivot) {
  check_matrix(a, "linalg.lu", "A", false);
  TORCH_CHECK(pivot, "linalg.lu: LU without pivoting is not implemented on the CPU");
  auto r = run_linalg("aten::linalg_lu", "", {a}, [](hlo::Builder& b, const Values& t) {
    ops::LuFactors f = ops::lower_lu_factor(b, t[0]);
    auto [p, l, u] = ops::lower_lu_unpack(b, f.lu, f.perm);
    return Values{p, l, u};
  });
  return {r[0], r[1], r[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> tpu_linalg_lu_out(const Tensor& a, bool pivot, Tensor& p, Tensor& l, Tensor& u) {
  auto [pv, lv, uv] = tpu_linalg_lu(a, pivot);
  write(p, pv);
  write(l, lv);
  write(u, uv);
  return {p, l, u};
}

std::tuple<Tensor, Tensor, Tensor> tpu_lu_unpack(const Tensor& lu, const Tensor& pivots, bool unpack_data,
                                             bool unpack_pivots) {
  TORCH_CHECK(lu.dim() >= 2, "torch.lu_unpack: Expected tensor with 2 or more dimensions. Got size: ", lu.sizes(),
              " instead");
  TORCH_CHECK(pivots.scalar_type() == at::kInt,
              "torch.lu_unpack: LU_pivots is expected to be a contiguous tensor of torch.int32 dtype.\n"
              "Note: this function is intended to be used with the output produced by torch.linalg.lu_factor");
  to_element_type(lu.scalar_type(), "aten::lu_unpack");
  const int64_t m = lu.size(-2);
  auto r = run_linalg("aten::lu_unpack", flags({unpack_data, unpack_pivots}), {lu, pivots},
               [m](hlo::Builder& b, const Values& t) {
                 auto [p, l, u] = ops::lower_lu_unpack(b, t[0], ops::pivots_to_perm(b, t[1], m));
                 return Values{p, l, u};
               });
  const auto empty = [&] { return at::empty({0}, lu.options()); };
  return {unpack_pivots ? r[0] : empty(), unpack_data ? r[1] : empty(), unpack_data ? r[2] : empty()};
}

std::tuple<Tensor&, Tensor&, Tensor&> tpu_lu_unpack_out(const Tensor& lu, const Tensor& pivots, bool unpack_data,
                                                    bool unpack_pivots, Tensor& p, Tensor& l, Tensor& u) {
  auto [pv, lv, uv] = tpu_lu_unpack(lu, pivots, unpack_data, unpack_pivots);
  write(p, pv);
  write(l, lv);
  write(u, uv);
  return {p, l, u};
}

Tensor tpu_lu_solve(const Tensor& lu, const Tensor& pivots, const Tensor& rhs, bool left, bool adjoint) {
  check_matrix(lu, "linalg.lu_solve", "LU", true);
  check_matrix(rhs, "linalg.lu_solve", "B", false);
  check_same_dtype(lu, rhs, "linalg.lu_solve");
  TORCH_CHECK(pivots.scalar_type() == at::kInt, "linalg.lu_solve: pivots should be a Tensor of scalar type int32");
  const int64_t n = lu.size(-1);
  TORCH_CHECK(left ? rhs.size(-2) == n : rhs.size(-1) == n, "linalg.lu_solve: Incompatible shapes of A and B for ",
              "the equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", rhs.size(-2), "x",
              rhs.size(-1), ")");
  // By columns for AX = B; XA = B is solved transposed, so by rows (as ATen).
  const Tensor x =
      run_linalg("aten::linalg_lu_solve", flags({left, adjoint}), {lu, pivots, rhs},
                 [n, left, adjoint](hlo::Builder& b, const Values& t) {
                   return Values{ops::lower_lu_solve(b, t[0], ops::pivots_to_perm(b, t[1], n), t[2], left, adjoint)};
                 })
          .at(0);
  return left ? column_major(x) : x;
}

Tensor& tpu_lu_solve_out(const Tensor& lu, const Tensor& pivots, const Tensor& rhs, bool left, bool adjoint,
                     Tensor& out) {
  write(out, tpu_lu_solve(lu, pivots, rhs, left, adjoint));
  return out;
}

// ---- solve, inv, det, slogdet over LU -------------------------------------------

// B is a (batch of) vector(s) rather than matrices: B.dim() == 1, or B's shape
// is A's without the last dim (ATen's rule).
bool vector_rhs(const Tensor& a, const Tensor& rhs) {
  if (rhs.dim() == 1) return true;
  return a.dim() - 1 == rhs.dim() && rhs.sizes() == a.sizes().slice(0, a.dim() - 1);
}

std::tuple<Tensor, Tensor, Tensor, Tensor> tpu_solve_ex(const Tensor& a, const Tensor& rhs, bool left,
                                                    bool check_errors) {
  check_matrix(a, "linalg.solve", "A", true);
  check_same_dtype(a, rhs, "linalg.solve");
  const bool vector = vector_rhs(a, rhs);
  const Tensor b2 = vector ? rhs.unsqueeze(left ? -1 : -2) : rhs;
  TORCH_CHECK(b2.dim() >= 2, "linalg.solve: The input tensor B must have at least 2 dimensions.");
  const int64_t n = a.size(-1);
  TORCH_CHECK(left ? b2.size(-2) == n : b2.size(-1) == n, "linalg.solve: Incompatible shapes of A and B for the ",
              "equation ", left ? "AX = B" : "XA = B", " (", n, "x", n, " and ", b2.size(-2), "x", b2.size(-1), ")");
  auto r = run_linalg("aten::_linalg_solve_ex", flags({left}), {a, b2}, [left](hlo::Builder& b, const Values& t) {
    ops::LuFactors f = ops::lower_lu_factor(b, t[0]);
    return Values{ops::lower_lu_solve(b, f.lu, f.perm, t[1], left, false), f.lu, f.pivots, f.info};
  });
  if (check_errors) at::_linalg_check_errors(r[3], "torch.linalg.solve_ex", a.dim() == 2);
  // By columns over the last two dims, even for a batch of vectors (as ATen).
  Tensor result = column_major(vector ? r[0].squeeze(left ? -1 : -2) : r[0]);
  return {result, column_major(r[1]), r[2], r[3]};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> tpu_solve_ex_out(const Tensor& a, const Tensor& rhs, bool left,
                                                            bool check_errors, Tensor& result, Tensor& lu,
                                                            Tensor& pivots, Tensor& info) {
  auto [x, l, p, i] = tpu_solve_ex(a, rhs, left, check_errors);
  write(result, x);
  write(lu, l);
  write(pivots, p);
  write(info, i);
  return {result, lu, pivots, info};
}

std::tuple<Tensor, Tensor> tpu_inv_ex(const Tensor& a, bool check_errors) {
  check_matrix(a, "linalg.inv", "A", true);
  auto r = run_linalg("aten::linalg_inv_ex", "", {a}, [](hlo::Builder& b, const Values& t) {
    ops::LuFactors f = ops::lower_lu_factor(b, t[0]);
    hlo::Value eye = b.select(
        b.compare(b.iota(hlo::TensorType(ElementType::kS32, t[0].dims()), t[0].rank() - 1),
                  b.iota(hlo::TensorType(ElementType::kS32, t[0].dims()), t[0].rank() - 2), "EQ"),
        b.constant_splat(1, t[0].type()), b.constant_splat(0, t[0].type()));
    return Values{ops::lower_lu_solve(b, f.lu, f.perm, eye, true, false), f.info};
  });
  if (check_errors) at::_linalg_check_errors(r[1], "linalg.inv_ex", a.dim() == 2);
  return {column_major(r[0]), r[1]};
}

std::tuple<Tensor&, Tensor&> tpu_inv_ex_out(const Tensor& a, bool check_errors, Tensor& inverse, Tensor& info) {
  check_out_dtype(inverse, a.scalar_type());
  check_out_dtype(info, c10::kInt);
  auto [x, i] = tpu_inv_ex(a, check_errors);
  write(inverse, x);
  write(info, i);
  return {inverse, info};
}

// Like CPU, det and slogdet factor A^T when A is contiguous and real (a
// column-major LAPACK call needs no copy then), and their backward formulas
// expect the LU of A^T in that case.
bool factors_transpose(const Tensor& a) { return a.is_contiguous() && !a.is_complex(); }

std::tuple<Tensor, Tensor, Tensor> tpu_linalg_det(const Tensor& a) {
  check_matrix(a, "linalg.det", "A", true);
  const bool use_t = factors_transpose(a);
  auto r = run_linalg("aten::_linalg_det", flags({use_t}), {a}, [use_t](hlo::Builder& b, const Values& t) {
    ops::LuFactors f = ops::lower_lu_factor(b, use_t ? ops::matrix::transpose(b, t[0], false) : t[0]);
    return Values{ops::lower_det_from_lu(b, f.lu, f.pivots), f.lu, f.pivots};
  });
  return {r[0], r[1], r[2]};
}

std::tuple<Tensor&, Tensor&, Tensor&> tpu_linalg_det_out(const Tensor& a, Tensor& result, Tensor& lu, Tensor& pivots) {
  auto [d, l, p] = tpu_linalg_det(a);
  write(result, d);
  write(lu, l);
  write(pivots, p);
  return {result, lu, pivots};
}

std::tuple<Tensor, Tensor, Tensor, Tensor> tpu_linalg_slogdet(const Tensor& a) {
  check_matrix(a, "linalg.slogdet", "A", true);
  const bool use_t = factors_transpose(a);
  auto r = run_linalg("aten::_linalg_slogdet", flags({use_t}), {a}, [use_t](hlo::Builder& b, const Values& t) {
    ops::LuFactors f = ops::lower_lu_factor(b, use_t ? ops::matrix::transpose(b, t[0], false) : t[0]);
    auto [sign, logabs] = ops::lower_slogdet_from_lu(b, f.lu, f.pivots);
    return Values{sign, logabs, f.lu, f.pivots};
  });
  return {r[0], r[1], r[2], r[3]};
}

std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> tpu_linalg_slogdet_out(const Tensor& a, Tensor& sign, Tensor& logabsdet,
                                                                  Tensor& lu, Tensor& pivots) {
  auto [s, l, f, p] = tpu_linalg_slogdet(a);
  write(sign, s);
  write(logabsdet, l);
  write(lu, f);
  write(pivots, p);
  return {sign, logabsdet, lu, pivots};
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("linalg_cholesky_ex", tpu_cholesky_ex);
  m.impl("linalg_cholesky_ex.L", tpu_cholesky_ex_out);
  m.impl("cholesky", tpu_cholesky);
  m.impl("cholesky.out", tpu_cholesky_out);
  m.impl("_cholesky_solve_helper", tpu_cholesky_solve_helper);
  m.impl("_cholesky_solve_helper.out", tpu_cholesky_solve_helper_out);
  m.impl("cholesky_inverse", tpu_cholesky_inverse);
  m.impl("cholesky_inverse.out", tpu_cholesky_inverse_out);
  m.impl("linalg_solve_triangular", tpu_solve_triangular);
  m.impl("linalg_solve_triangular.out", tpu_solve_triangular_out);
  m.impl("triangular_solve", tpu_triangular_solve);
  m.impl("triangular_solve.X", tpu_triangular_solve_out);
  m.impl("linalg_lu_factor_ex", tpu_lu_factor_ex);
  m.impl("linalg_lu_factor_ex.out", tpu_lu_factor_ex_out);
  m.impl("linalg_lu", tpu_linalg_lu);
  m.impl("linalg_lu.out", tpu_linalg_lu_out);
  m.impl("lu_unpack", tpu_lu_unpack);
  m.impl("lu_unpack.out", tpu_lu_unpack_out);
  m.impl("linalg_lu_solve", tpu_lu_solve);
  m.impl("linalg_lu_solve.out", tpu_lu_solve_out);
  m.impl("_linalg_solve_ex", tpu_solve_ex);
  m.impl("_linalg_solve_ex.result", tpu_solve_ex_out);
  m.impl("linalg_inv_ex", tpu_inv_ex);
  m.impl("linalg_inv_ex.inverse", tpu_inv_ex_out);
  m.impl("_linalg_det", tpu_linalg_det);
  m.impl("_linalg_det.result", tpu_linalg_det_out);
  m.impl("_linalg_slogdet", tpu_linalg_slogdet);
  m.impl("_linalg_slogdet.sign", tpu_linalg_slogdet_out);
}

}  // namespace torch_tpu::aten
