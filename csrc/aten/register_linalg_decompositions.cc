// ATen glue for the orthogonal decompositions: QR (geqrf,
// linalg_householder_product, ormqr, linalg_qr), the Hermitian
// eigendecomposition (_linalg_eigh) and the SVD (_linalg_svd). What
// torch.linalg builds on them (eigvalsh, svdvals, pinv, matrix_rank, cond,
// the nuclear and spectral norms) is composite over these, and so are
// their backward formulas. Least squares (linalg_lstsq) is solved over QR
// or the SVD; the matrix exponential (linalg_matrix_exp) is here too.
// Lowerings: csrc/ops/linalg/qr.cc and jacobi.cc.
#include <ATen/core/Tensor.h>
#include <ATen/ops/_linalg_check_errors.h>
#include <ATen/ops/any.h>
#include <ATen/ops/empty.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <limits>
#include <torch/library.h>

#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <tuple>

#include "aten/linalg_glue.h"
#include "aten/result_layout.h"
#include "ops/linalg/jacobi.h"
#include "ops/linalg/lstsq.h"
#include "ops/linalg/matrix_exp.h"
#include "ops/linalg/matrix_util.h"
#include "ops/linalg/qr.h"

namespace torch_tpu::aten {

namespace {

using namespace linalg;

Tensor empty_like_dtype(const Tensor& a) { return at::empty({0}, a.options()); }

void check_equal_batches(const Tensor& a, const Tensor& b, int64_t a_tail, int64_t b_tail, const char* api,
                         const char* a_name, const char* b_name) {
  TORCH_CHECK(a.dim() - a_tail == b.dim() - b_tail &&
                  a.sizes().slice(0, a.dim() - a_tail) == b.sizes().slice(0, b.dim() - b_tail),
              api, ": Expected batch dimensions of ", b_name, " to be equal to ", a_name, "'s batch dimensions, but got ",
              a_name, " of shape ", a.sizes(), " and ", b_name, " of shape ", b.sizes());
}

// ---- QR ---------------------------------------------------------------------------

std::tuple<Tensor, Tensor> tpu_geqrf(const Tensor& self) {
  check_matrix(self, "torch.geqrf", "input", false);
  auto r = run_linalg("aten::geqrf", "", {self}, [](hlo::Builder& b, const Values& t) {
    auto [a, tau] = ops::lower_geqrf(b, t[0]);
    return Values{a, tau};
  });
  return {r[0], r[1]};
}

std::tuple<Tensor&, Tensor&> tpu_geqrf_out(const Tensor& self, Tensor& a, Tensor& tau) {
  auto [av, tv] = tpu_geqrf(self);
  write(a, av);
  write(tau, tv);
  return {a, tau};
}

void check_reflectors(const Tensor& input, const Tensor& tau, const char* api) {
  check_matrix(input, api, "input", false);
  check_same_dtype(input, tau, api);
  TORCH_CHECK(input.dim() - tau.dim() == 1, api, ": Expected tau to have one dimension less than input, but got ",
              "tau.ndim equal to ", tau.dim(), " and input.ndim is equal to ", input.dim());
  TORCH_CHECK(tau.size(-1) <= input.size(-1), api,
              ": input.shape[-1] must be greater than or equal to tau.shape[-1]");
  check_equal_batches(input, tau, 2, 1, api, "input", "tau");
}

Tensor tpu_householder_product(const Tensor& input, const Tensor& tau) {
  const char* api = "torch.linalg.householder_product";
  check_reflectors(input, tau, api);
  TORCH_CHECK(input.size(-2) >= input.size(-1), api,
              ": input.shape[-2] must be greater than or equal to input.shape[-1]");
  return column_major(run_linalg("aten::linalg_householder_product", "", {input, tau},
                                 [](hlo::Builder& b, const Values& t) {
                                   return Values{ops::lower_householder_product(b, t[0], t[1])};
                                 })
                          .at(0));
}

Tensor& tpu_householder_product_out(const Tensor& input, const Tensor& tau, Tensor& out) {
  write_castable(out, tpu_householder_product(input, tau));
  return out;
}

Tensor tpu_ormqr(const Tensor& input, const Tensor& tau, const Tensor& other, bool left, bool transpose) {
  const char* api = "torch.ormqr";
  check_reflectors(input, tau, api);
  TORCH_CHECK(other.dim() >= 2, api, ": other must have at least 2 dimensions.");
  check_same_dtype(input, other, api);
  const int64_t side = left ? -2 : -1;
  TORCH_CHECK(other.size(side) == input.size(-2), api, ": other.shape[", side,
              "] must be equal to input.shape[-2]");
  TORCH_CHECK(tau.size(-1) <= other.size(side), api, ": tau.shape[-1] must be less than or equal to other.shape[",
              side, "]");
  check_equal_batches(input, other, 2, 2, api, "input", "other");
  return column_major(run_linalg("aten::ormqr", flags({left, transpose}), {input, tau, other},
                                 [left, transpose](hlo::Builder& b, const Values& t) {
                                   return Values{ops::lower_apply_householder(b, t[0], t[1], t[2], left, transpose)};
                                 })
                          .at(0));
}

Tensor& tpu_ormqr_out(const Tensor& input, const Tensor& tau, const Tensor& other, bool left, bool transpose,
                      Tensor& out) {
  write(out, tpu_ormqr(input, tau, other, left, transpose));
  return out;
}

std::tuple<Tensor, Tensor> tpu_linalg_qr(const Tensor& a, c10::string_view mode) {
  TORCH_CHECK(mode == "reduced" || mode == "complete" || mode == "r", "qr received unrecognized mode '", mode,
              "' but expected one of 'reduced' (default), 'r', or 'complete'");
  check_matrix(a, "linalg.qr", "A", false);
  if (mode == "r") {
    auto r = run_linalg("aten::linalg_qr", "r", {a}, [](hlo::Builder& b, const Values& t) {
      return Values{std::get<1>(ops::lower_qr(b, t[0], false))};
    });
    return {empty_like_dtype(a), column_major(r[0])};
  }
  const bool complete = mode == "complete";
  auto r = run_linalg("aten::linalg_qr", flags({complete}), {a}, [complete](hlo::Builder& b, const Values& t) {
    auto [q, rr] = ops::lower_qr(b, t[0], complete);
    return Values{q, rr};
  });
  return {column_major(r[0]), column_major(r[1])};
}

std::tuple<Tensor&, Tensor&> tpu_linalg_qr_out(const Tensor& a, c10::string_view mode, Tensor& q, Tensor& r) {
  auto [qv, rv] = tpu_linalg_qr(a, mode);
  write(q, qv);
  write(r, rv);
  return {q, r};
}

// ---- eigh and SVD ---------------------------------------------------------------------

std::tuple<Tensor, Tensor> tpu_linalg_eigh(const Tensor& a, c10::string_view uplo, bool compute_v) {
  TORCH_CHECK(uplo == "L" || uplo == "U" || uplo == "l" || uplo == "u",
              "Expected UPLO argument to be 'L' or 'U', but got ", uplo);
  check_matrix(a, "linalg.eigh", "A", true);
  const bool upper = uplo == "U" || uplo == "u";
  auto r = run_linalg("aten::_linalg_eigh", flags({upper}), {a}, [upper](hlo::Builder& b, const Values& t) {
    ops::Eigh e = ops::lower_eigh(b, t[0], upper);
    return Values{e.eigenvalues, e.eigenvectors, e.info};
  });
  // A sync, as on CPU and CUDA: NaN input fails as it typically does in
  // LAPACK; infinities give NaN results, as they typically do there.
  at::_linalg_check_errors(r[2].eq(2).to(at::kInt), "linalg.eigh", a.dim() == 2);
  return {r[0], compute_v ? column_major(r[1]) : empty_like_dtype(a)};
}

std::tuple<Tensor&, Tensor&> tpu_linalg_eigh_out(const Tensor& a, c10::string_view uplo, bool compute_v,
                                                 Tensor& eigenvalues, Tensor& eigenvectors) {
  auto [w, v] = tpu_linalg_eigh(a, uplo, compute_v);
  write(eigenvalues, w);
  write(eigenvectors, v);
  return {eigenvalues, eigenvectors};
}

std::tuple<Tensor, Tensor, Tensor> tpu_linalg_svd(const Tensor& a, bool full_matrices, bool compute_uv,
                                                  std::optional<c10::string_view> driver) {
  TORCH_CHECK(!driver.has_value(),
              "torch.linalg.svd: keyword argument `driver=` is only supported on CUDA inputs with cuSOLVER backend.");
  check_matrix(a, "linalg.svd", "A", false);
  const bool full = full_matrices && compute_uv;
  auto r = run_linalg("aten::_linalg_svd", flags({full}), {a}, [full](hlo::Builder& b, const Values& t) {
    ops::Svd s = ops::lower_svd(b, t[0], full);
    return Values{s.u, s.s, s.vh, s.info};
  });
  // A sync, as on CPU and CUDA: NaN input fails as in LAPACK; infinities
  // give NaN results, as there.
  TORCH_CHECK_LINALG(!r[3].eq(2).any().item<bool>(),
                     "linalg.svd: The algorithm failed to converge because the input matrix contained "
                     "non-finite values.");
  if (!compute_uv) return {empty_like_dtype(a), r[1], empty_like_dtype(a)};
  return {column_major(r[0]), r[1], column_major(r[2])};
}

std::tuple<Tensor&, Tensor&, Tensor&> tpu_linalg_svd_out(const Tensor& a, bool full_matrices, bool compute_uv,
                                                         std::optional<c10::string_view> driver, Tensor& u,
                                                         Tensor& s, Tensor& vh) {
  auto [uv, sv, vhv] = tpu_linalg_svd(a, full_matrices, compute_uv, driver);
  write(u, uv);
  write(s, sv);
  write(vh, vhv);
  return {u, s, vh};
}

// ---- least squares -------------------------------------------------------------------

// The drivers' outputs follow CPU's: gels gives residuals (m > n) but no
// rank; gelsy the rank only; gelsd / gelss the rank, the singular values and
// residuals when m > n and every matrix has full rank (a sync, as on CPU).
// The default is CPU's, gelsy (CUDA offers gels only): rank-revealing, so
// rank-deficient problems get the minimum-norm solution. gelsy here is
// SVD-based, not LAPACK's pivoted QR: the same solution where the rank is
// clear-cut.
std::tuple<Tensor&, Tensor&, Tensor&, Tensor&> tpu_linalg_lstsq_out(const Tensor& a, const Tensor& other,
                                                                    std::optional<double> rcond,
                                                                    std::optional<c10::string_view> driver,
                                                                    Tensor& solution, Tensor& residuals,
                                                                    Tensor& rank, Tensor& singular_values) {
  const char* api = "torch.linalg.lstsq";
  TORCH_CHECK(a.dim() >= 2, api, ": input must have at least 2 dimensions.");
  TORCH_CHECK(other.dim() >= 1, api, ": other must have at least 1 dimension.");
  TORCH_CHECK(a.dim() >= other.dim() && a.dim() - other.dim() <= 1, api,
              ": input.dim() must be greater or equal to other.dim() and (input.dim() - other.dim()) <= 1");
  check_dtype(a, api);
  TORCH_CHECK(a.scalar_type() == other.scalar_type(), api, ": Expected input and other to have the same dtype, ",
              "but got input's dtype ", a.scalar_type(), " and other's dtype ", other.scalar_type());
  const std::string name(driver.value_or("gelsy"));
  TORCH_CHECK(name == "gels" || name == "gelsy" || name == "gelsd" || name == "gelss", api,
              ": parameter `driver` should be one of (gels, gelsy, gelsd, gelss)");
  const bool vector = other.dim() == a.dim() - 1;
  const Tensor rhs = vector ? other.unsqueeze(-1) : other;
  TORCH_CHECK(a.size(-2) == rhs.size(-2), api, ": input.size(-2) should match other.size(-2)");
  const int64_t m = a.size(-2), n = a.size(-1);
  const bool is_double = c10::toRealValueType(a.scalar_type()) == at::kDouble;
  const double eps = is_double ? std::numeric_limits<double>::epsilon() : std::numeric_limits<float>::epsilon();
  // CPU's default; a negative rcond means machine precision (LAPACK).
  const double cutoff = !rcond.has_value() ? eps * std::max(m, n) : (*rcond < 0 ? eps : *rcond);
  const bool qr = name == "gels";
  // The cutoff is a constant of the program: its exact bits go in the key.
  std::ostringstream key;
  key << name << ':' << std::hexfloat << cutoff;
  auto r = run_linalg("aten::linalg_lstsq", key.str(), {a, rhs},
                      [qr, cutoff](hlo::Builder& b, const Values& t) {
                        hlo::Value x = t[0], y = t[1];
                        ops::matrix::broadcast_batches(b, x, y, "torch.linalg.lstsq");
                        ops::LeastSquares l = qr ? ops::lower_lstsq_qr(b, x, y) : ops::lower_lstsq_svd(b, x, y, cutoff);
                        return Values{l.solution, l.residuals, l.rank, l.singular_values, l.info};
                      });
  if (qr) at::_linalg_check_errors(r[4], api, r[4].dim() == 0);
  Tensor empty_real = at::empty({0}, a.options().dtype(c10::toRealValueType(a.scalar_type())));
  bool keep_residuals = m > n && name != "gelsy";
  if (keep_residuals && !qr) keep_residuals = r[2].eq(n).all().item<bool>();
  write_castable(solution, vector ? r[0].squeeze(-1) : r[0]);
  write_castable(residuals, keep_residuals ? r[1] : empty_real);
  write_castable(rank, qr ? at::empty({0}, a.options().dtype(at::kLong)) : r[2]);
  write_castable(singular_values, name == "gelsd" || name == "gelss" ? r[3] : empty_real);
  return {solution, residuals, rank, singular_values};
}

// ---- matrix exponential ---------------------------------------------------------------

Tensor tpu_matrix_exp(const Tensor& a) {
  TORCH_CHECK(a.dim() >= 2 && (c10::isFloatingType(a.scalar_type()) || c10::isComplexType(a.scalar_type())),
              "matrix_exp(", a.scalar_type(), "{", a.sizes(), "}): expected self tensor of floating or complex types ",
              "with dim at least 2");
  TORCH_CHECK(a.size(-1) == a.size(-2), "matrix_exp(", a.scalar_type(), "{", a.sizes(),
              "}): expected self tensor of squared matrices");
  to_element_type(a.scalar_type(), "linalg.matrix_exp");
  return run_linalg("aten::linalg_matrix_exp", "", {a}, [](hlo::Builder& b, const Values& t) {
           return Values{ops::lower_matrix_exp(b, t[0])};
         })
      .at(0);
}

Tensor& tpu_matrix_exp_out(const Tensor& a, Tensor& out) {
  write(out, tpu_matrix_exp(a));
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("geqrf", tpu_geqrf);
  m.impl("geqrf.a", tpu_geqrf_out);
  m.impl("linalg_householder_product", tpu_householder_product);
  m.impl("linalg_householder_product.out", tpu_householder_product_out);
  m.impl("ormqr", tpu_ormqr);
  m.impl("ormqr.out", tpu_ormqr_out);
  m.impl("linalg_qr", tpu_linalg_qr);
  m.impl("linalg_qr.out", tpu_linalg_qr_out);
  m.impl("_linalg_eigh", tpu_linalg_eigh);
  m.impl("_linalg_eigh.eigenvalues", tpu_linalg_eigh_out);
  m.impl("_linalg_svd", tpu_linalg_svd);
  m.impl("_linalg_svd.U", tpu_linalg_svd_out);
  m.impl("linalg_lstsq.out", tpu_linalg_lstsq_out);
  m.impl("linalg_matrix_exp", tpu_matrix_exp);
  m.impl("linalg_matrix_exp.out", tpu_matrix_exp_out);
}

}  // namespace torch_tpu::aten
