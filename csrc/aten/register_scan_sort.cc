// ATen glue for the scans (cumsum, cumprod, cummax, cummin, logcumsumexp)
// and the sorting ops (sort, topk, kthvalue, median / nanmedian, mode). argsort,
// msort and torch.sort's default overload are composite in ATen and reach
// sort.stable. Result dtypes, shape checks and errors follow CPU; the
// lowerings live in csrc/ops/reduction/{scan,sort}.cc.
#include <ATen/MemoryOverlap.h>
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/full.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "aten/result_layout.h"
#include "ops/reduction/scan.h"
#include "ops/reduction/select.h"
#include "ops/reduction/sort.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

using Lower = std::function<std::vector<hlo::Value>(hlo::Builder&, const hlo::Value&)>;

std::vector<at::Tensor> run(const char* name, std::string key, const at::Tensor& self, Lower lower) {
  return run_op(OpCall{name, std::move(key), {self}, {}},
                [lower = std::move(lower)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                           const std::vector<hlo::Value>&) { return lower(b, t[0]); });
}

void run_into(const char* name, std::string key, const at::Tensor& self, Lower lower, at::Tensor& out) {
  run_op_into(OpCall{name, std::move(key), {self}, {}},
              [lower = std::move(lower)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                         const std::vector<hlo::Value>&) { return lower(b, t[0]); },
              out);
}

// The single dim a scan or sort runs along; 0 for a 0-dim input (which
// accepts 0 and -1).
int64_t wrap(const at::Tensor& self, int64_t dim) {
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  return self.dim() == 0 ? 0 : d;
}

// (values, indices) into the caller's out tensors.
std::tuple<at::Tensor&, at::Tensor&> write_pair(const std::tuple<at::Tensor, at::Tensor>& result, at::Tensor& values,
                                                at::Tensor& indices) {
  const auto& [v, i] = result;
  check_out_device(values, v);
  check_out_device(indices, i);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

// ---- cumsum, cumprod ------------------------------------------------------------

enum class Cum : char { kSum = '+', kProd = '*' };

const char* cum_name(Cum op) { return op == Cum::kSum ? "aten::cumsum" : "aten::cumprod"; }

Lower cum_lower(Cum op, int64_t d, ElementType out) {
  return [op, d, out](hlo::Builder& b, const hlo::Value& x) {
    return std::vector<hlo::Value>{op == Cum::kSum ? ops::lower_cumsum(b, x, d, out) : ops::lower_cumprod(b, x, d, out)};
  };
}

// CPU has no bool kernel for the scans' result (bool inputs promote to
// int64 unless a bool dtype or out= asks for it).
void check_cum_result_type(Cum op, c10::ScalarType t) {
  TORCH_CHECK_NOT_IMPLEMENTED(t != c10::kBool, op == Cum::kSum ? "\"cumsum_out\"" : "\"cumprod_out\"",
                              " not implemented for 'Bool'");
}

std::string cum_key(Cum op, int64_t d, ElementType out) {
  std::string key(1, static_cast<char>(op));
  key.push_back(static_cast<char>(out));
  put(key, d);
  return key;
}

at::Tensor cum(Cum op, const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype) {
  const int64_t d = wrap(self, dim);
  const c10::ScalarType t =
      dtype.value_or(c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? c10::kLong : self.scalar_type());
  check_cum_result_type(op, t);
  const ElementType out = to_element_type(t, cum_name(op));
  to_element_type(self.scalar_type(), cum_name(op));
  return run(cum_name(op), cum_key(op, d, out), self, cum_lower(op, d, out)).at(0);
}

at::Tensor& cum_into(Cum op, const at::Tensor& self, int64_t dim, std::optional<c10::ScalarType> dtype, at::Tensor& out,
                     bool inplace) {
  const int64_t d = wrap(self, dim);
  const c10::ScalarType t = dtype.value_or(out.scalar_type());
  check_out_dtype(out, t);
  check_cum_result_type(op, t);
  const ElementType type = to_element_type(t, cum_name(op));
  to_element_type(self.scalar_type(), cum_name(op));
  prepare_out(out, self.sizes(), inplace);
  at::assert_no_partial_overlap(out, self);  // as CPU's kernel, through TensorIterator
  run_into(cum_name(op), cum_key(op, d, type), self, cum_lower(op, d, type), out);
  return out;
}

at::Tensor cumsum(const at::Tensor& s, int64_t dim, std::optional<c10::ScalarType> dt) { return cum(Cum::kSum, s, dim, dt); }
at::Tensor& cumsum_(at::Tensor& s, int64_t dim, std::optional<c10::ScalarType> dt) {
  return cum_into(Cum::kSum, s, dim, dt, s, true);
}
at::Tensor& cumsum_out(const at::Tensor& s, int64_t dim, std::optional<c10::ScalarType> dt, at::Tensor& out) {
  return cum_into(Cum::kSum, s, dim, dt, out, false);
}
at::Tensor cumprod(const at::Tensor& s, int64_t dim, std::optional<c10::ScalarType> dt) {
  return cum(Cum::kProd, s, dim, dt);
}
at::Tensor& cumprod_(at::Tensor& s, int64_t dim, std::optional<c10::ScalarType> dt) {
  return cum_into(Cum::kProd, s, dim, dt, s, true);
}
at::Tensor& cumprod_out(const at::Tensor& s, int64_t dim, std::optional<c10::ScalarType> dt, at::Tensor& out) {
  return cum_into(Cum::kProd, s, dim, dt, out, false);
}

// ---- cummax, cummin, logcumsumexp ----------------------------------------------------

std::tuple<at::Tensor, at::Tensor> cummax_min(const at::Tensor& self, int64_t dim, bool is_max) {
  const char* name = is_max ? "aten::cummax" : "aten::cummin";
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), is_max ? "cummax" : "cummin", " not implemented for '",
                              self.scalar_type(), "'");
  to_element_type(self.scalar_type(), name);
  const int64_t d = wrap(self, dim);
  std::string key(1, is_max ? '>' : '<');
  put(key, d);
  auto r = run(name, std::move(key), self, [d, is_max](hlo::Builder& b, const hlo::Value& x) {
    auto [v, i] = ops::lower_cummax_min(b, x, d, is_max);
    return std::vector<hlo::Value>{v, i};
  });
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor, at::Tensor> cummax(const at::Tensor& s, int64_t dim) { return cummax_min(s, dim, true); }
std::tuple<at::Tensor, at::Tensor> cummin(const at::Tensor& s, int64_t dim) { return cummax_min(s, dim, false); }
std::tuple<at::Tensor&, at::Tensor&> cummax_out(const at::Tensor& s, int64_t dim, at::Tensor& v, at::Tensor& i) {
  check_out_dtype(v, s.scalar_type());
  check_out_dtype(i, c10::kLong);
  return write_pair(cummax_min(s, dim, true), v, i);
}
std::tuple<at::Tensor&, at::Tensor&> cummin_out(const at::Tensor& s, int64_t dim, at::Tensor& v, at::Tensor& i) {
  check_out_dtype(v, s.scalar_type());
  check_out_dtype(i, c10::kLong);
  return write_pair(cummax_min(s, dim, false), v, i);
}

void check_logcumsumexp(const at::Tensor& self) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()) || c10::isComplexType(self.scalar_type()),
                              "\"logcumsumexp_out_cpu\" not implemented for '",
                              self.scalar_type(), "'");
}

at::Tensor logcumsumexp(const at::Tensor& self, int64_t dim) {
  check_logcumsumexp(self);
  const int64_t d = wrap(self, dim);
  std::string key;
  put(key, d);
  return run("aten::logcumsumexp", std::move(key), self, [d](hlo::Builder& b, const hlo::Value& x) {
           return std::vector<hlo::Value>{ops::lower_logcumsumexp(b, x, d)};
         }).at(0);
}

at::Tensor& logcumsumexp_out(const at::Tensor& self, int64_t dim, at::Tensor& out) {
  check_logcumsumexp(self);
  check_out_dtype(out, self.scalar_type());
  const int64_t d = wrap(self, dim);
  std::string key;
  put(key, d);
  at::native::resize_output(out, self.sizes());
  run_into("aten::logcumsumexp", std::move(key), self, [d](hlo::Builder& b, const hlo::Value& x) {
    return std::vector<hlo::Value>{ops::lower_logcumsumexp(b, x, d)};
  }, out);
  return out;
}

// ---- sort, topk, kthvalue ---------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> sort_stable(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                               bool descending) {
  TORCH_CHECK(!self.is_complex(), " Sort does not support complex dtypes on CPU");
  to_element_type(self.scalar_type(), "aten::sort");
  const int64_t d = wrap(self, dim);
  // Always stable: an unstable sort may order ties in any way, this one included.
  std::string key(1, descending ? 'd' : 'a');
  put(key, d);
  auto r = run("aten::sort", std::move(key), self, [d, descending](hlo::Builder& b, const hlo::Value& x) {
    auto [v, i] = ops::lower_sort(b, x, d, descending);
    return std::vector<hlo::Value>{v, i};
  });
  // Values and indices take the input's layout, as CPU's sort allocates them.
  return {in_layout_of(r.at(0), self), in_layout_of(r.at(1), self)};
}

std::tuple<at::Tensor&, at::Tensor&> sort_stable_out(const at::Tensor& self, std::optional<bool> stable, int64_t dim,
                                                     bool descending, at::Tensor& values, at::Tensor& indices) {
  check_out_dtype(values, self.scalar_type());
  check_out_dtype(indices, c10::kLong);
  return write_pair(sort_stable(self, stable, dim, descending), values, indices);
}

std::tuple<at::Tensor, at::Tensor> topk(const at::Tensor& self, c10::SymInt k_sym, int64_t dim, bool largest,
                                        bool sorted) {
  const int64_t k = k_sym.guard_int(__FILE__, __LINE__);
  const int64_t d = wrap(self, dim);
  const int64_t n = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK(k >= 0 && k <= n, "selected index k out of range");
  TORCH_CHECK(self.scalar_type() != c10::kBool, "topk does not support bool dtypes on CPU");
  TORCH_CHECK(!self.is_complex(), "topk does not support complex dtypes on CPU");
  to_element_type(self.scalar_type(), "aten::topk");
  // CPU copies a 0-dim input whatever k (0 or 1) is.
  if (self.dim() == 0) return {self.clone(), at::zeros({}, self.options().dtype(c10::kLong))};
  if (k == 0 || self.numel() == 0) {
    std::vector<int64_t> shape = self.sizes().vec();
    if (self.dim() > 0) shape[d] = k;
    return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
  }
  std::string key(1, largest ? 'l' : 's');
  put(key, k);
  put(key, d);
  auto r = run("aten::topk", std::move(key), self, [k, d, largest](hlo::Builder& b, const hlo::Value& x) {
    auto [v, i] = ops::lower_topk(b, x, k, d, largest);
    return std::vector<hlo::Value>{v, i};
  });
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> topk_out(const at::Tensor& self, c10::SymInt k, int64_t dim, bool largest,
                                              bool sorted, at::Tensor& values, at::Tensor& indices) {
  check_out_dtype(values, self.scalar_type());
  check_out_dtype(indices, c10::kLong);
  return write_pair(topk(self, std::move(k), dim, largest, sorted), values, indices);
}

std::tuple<at::Tensor, at::Tensor> kthvalue(const at::Tensor& self, c10::SymInt k_sym, int64_t dim, bool keepdim) {
  const int64_t k = k_sym.guard_int(__FILE__, __LINE__);
  const int64_t d = wrap(self, dim);
  const int64_t n = self.dim() == 0 ? 1 : self.size(d);
  TORCH_CHECK_INDEX(n > 0, "kthvalue(): Expected reduction dim ", d, " to have non-zero size.");
  TORCH_CHECK(k >= 1 && k <= n, "kthvalue(): selected number k out of range for dimension ", d);
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool && !self.is_complex(),
                              "\"kthvalue_cpu\" not implemented for '", self.scalar_type(), "'");
  to_element_type(self.scalar_type(), "aten::kthvalue");
  std::string key(1, keepdim ? 'k' : '-');
  put(key, k);
  put(key, d);
  auto r = run("aten::kthvalue", std::move(key), self, [k, d, keepdim](hlo::Builder& b, const hlo::Value& x) {
    auto [v, i] = ops::lower_kthvalue(b, x, k, d, keepdim);
    return std::vector<hlo::Value>{v, i};
  });
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> kthvalue_out(const at::Tensor& self, c10::SymInt k, int64_t dim, bool keepdim,
                                                  at::Tensor& values, at::Tensor& indices) {
  check_out_dtype(values, self.scalar_type());
  check_out_dtype(indices, c10::kLong);
  at::assert_no_overlap(self, values);  // CPU's one check
  return write_pair(kthvalue(self, std::move(k), dim, keepdim), values, indices);
}

// ---- median, nanmedian -------------------------------------------------------------------

const char* median_name(bool ignore_nan) { return ignore_nan ? "aten::nanmedian" : "aten::median"; }

void check_median_dtype(const at::Tensor& self, bool ignore_nan) {
  TORCH_CHECK_NOT_IMPLEMENTED(self.scalar_type() != c10::kBool && !self.is_complex(), "\"",
                              ignore_nan ? "nanmedian_out" : "median_out", "\" not implemented for '",
                              self.scalar_type(), "'");
  to_element_type(self.scalar_type(), median_name(ignore_nan));
}

// (values, indices) of an empty input reduced along d.
std::tuple<at::Tensor, at::Tensor> empty_values_and_indices(const at::Tensor& self, int64_t d, bool keepdim) {
  std::vector<int64_t> shape = self.sizes().vec();
  if (keepdim) {
    shape[d] = 1;
  } else {
    shape.erase(shape.begin() + d);
  }
  return {at::empty(shape, self.options()), at::empty(shape, self.options().dtype(c10::kLong))};
}

std::tuple<at::Tensor, at::Tensor> median_dim_like(const at::Tensor& self, int64_t dim, bool keepdim,
                                                   bool ignore_nan) {
  check_median_dtype(self, ignore_nan);
  const int64_t d = wrap(self, dim);
  const char* fn = ignore_nan ? "nanmedian()" : "median()";
  if (self.dim() > 0) {
    TORCH_CHECK_INDEX(self.numel() != 0 || self.size(d) != 0, fn, ": Expected reduction dim ", d,
                      " to have non-zero size.");
    if (self.numel() == 0) return empty_values_and_indices(self, d, keepdim);
  }
  std::string key(1, keepdim ? 'k' : '-');
  key.push_back(ignore_nan ? 'n' : '-');
  put(key, d);
  auto r = run(median_name(ignore_nan), std::move(key), self,
               [d, keepdim, ignore_nan](hlo::Builder& b, const hlo::Value& x) {
                 auto [v, i] = ops::lower_median(b, x, d, keepdim, ignore_nan);
                 return std::vector<hlo::Value>{v, i};
               });
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor, at::Tensor> median_dim(const at::Tensor& s, int64_t dim, bool keepdim) {
  return median_dim_like(s, dim, keepdim, false);
}
std::tuple<at::Tensor, at::Tensor> nanmedian_dim(const at::Tensor& s, int64_t dim, bool keepdim) {
  return median_dim_like(s, dim, keepdim, true);
}
std::tuple<at::Tensor&, at::Tensor&> median_dim_out(const at::Tensor& s, int64_t dim, bool keepdim, at::Tensor& v,
                                                    at::Tensor& i) {
  check_out_dtype(v, s.scalar_type());
  check_out_dtype(i, c10::kLong);
  return write_pair(median_dim_like(s, dim, keepdim, false), v, i);
}
std::tuple<at::Tensor&, at::Tensor&> nanmedian_dim_out(const at::Tensor& s, int64_t dim, bool keepdim, at::Tensor& v,
                                                       at::Tensor& i) {
  check_out_dtype(v, s.scalar_type());
  check_out_dtype(i, c10::kLong);
  return write_pair(median_dim_like(s, dim, keepdim, true), v, i);
}

// ---- mode --------------------------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> mode_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"mode_cpu\" not implemented for '", self.scalar_type(), "'");
  to_element_type(self.scalar_type(), "aten::mode");
  const int64_t d = wrap(self, dim);
  if (self.dim() > 0) {
    TORCH_CHECK_INDEX(self.size(d) != 0, "mode(): Expected reduction dim ", d, " to have non-zero size.");
    if (self.numel() == 0) return empty_values_and_indices(self, d, keepdim);
  }
  std::string key(1, keepdim ? 'k' : '-');
  put(key, d);
  auto r = run("aten::mode", std::move(key), self, [d, keepdim](hlo::Builder& b, const hlo::Value& x) {
    auto [v, i] = ops::lower_mode(b, x, d, keepdim);
    return std::vector<hlo::Value>{v, i};
  });
  return {r.at(0), r.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> mode_out(const at::Tensor& s, int64_t dim, bool keepdim, at::Tensor& v,
                                              at::Tensor& i) {
  check_out_dtype(v, s.scalar_type());
  check_out_dtype(i, c10::kLong);
  return write_pair(mode_dim(s, dim, keepdim), v, i);
}

// The median of all elements (a 0-dim value); NaN for an empty input.
at::Tensor median_all_like(const at::Tensor& self, bool ignore_nan) {
  check_median_dtype(self, ignore_nan);
  if (self.numel() == 0) {
    // CPU leaves an integer result uninitialized.
    if (!c10::isFloatingType(self.scalar_type())) return at::empty({}, self.options());
    return at::full({}, std::numeric_limits<double>::quiet_NaN(), self.options());
  }
  std::string key(1, ignore_nan ? 'n' : '-');
  const int64_t n = self.numel();
  return run(median_name(ignore_nan), std::move(key), self, [n, ignore_nan](hlo::Builder& b, const hlo::Value& x) {
           auto [v, i] = ops::lower_median(b, b.reshape(x, {n}), 0, false, ignore_nan);
           return std::vector<hlo::Value>{v};
         }).at(0);
}

at::Tensor median_all(const at::Tensor& s) { return median_all_like(s, false); }
at::Tensor nanmedian_all(const at::Tensor& s) { return median_all_like(s, true); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("cumsum", cumsum);
  m.impl("cumsum_", cumsum_);
  m.impl("cumsum.out", cumsum_out);
  m.impl("cumprod", cumprod);
  m.impl("cumprod_", cumprod_);
  m.impl("cumprod.out", cumprod_out);
  m.impl("cummax", cummax);
  m.impl("cummax.out", cummax_out);
  m.impl("cummin", cummin);
  m.impl("cummin.out", cummin_out);
  m.impl("logcumsumexp", logcumsumexp);
  m.impl("logcumsumexp.out", logcumsumexp_out);
  m.impl("sort.stable", sort_stable);
  m.impl("sort.values_stable", sort_stable_out);
  m.impl("topk", topk);
  m.impl("topk.values", topk_out);
  m.impl("kthvalue", kthvalue);
  m.impl("kthvalue.values", kthvalue_out);
  m.impl("median.dim", median_dim);
  m.impl("mode", mode_dim);
  m.impl("mode.values", mode_out);
  m.impl("median.dim_values", median_dim_out);
  m.impl("nanmedian.dim", nanmedian_dim);
  m.impl("nanmedian.dim_values", nanmedian_dim_out);
  m.impl("median", median_all);
  m.impl("nanmedian", nanmedian_all);
}

}  // namespace torch_tpu::aten
