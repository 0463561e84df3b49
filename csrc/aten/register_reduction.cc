// ATen glue for the reductions: sum, nansum, prod, mean, amax / amin,
// max / min (full and along a dim, with indices), argmax / argmin,
// all / any, var / std (and var_mean / std_mean), logsumexp, hash_tensor.
// Decides result dtypes and shapes and raises CPU's errors; the lowerings
// live in csrc/ops/reduction/reduce.cc.
#include <ATen/WrapDimUtils.h>
#include <ATen/WrapDimUtilsMulti.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "ops/reduction/reduce.h"

namespace torch_tpu::aten {

namespace {

using ops::ReduceKind;

// ---- dims and keys -----------------------------------------------------------

// The reduced dimensions, wrapped and sorted. None means all; so does an
// empty list unless `empty_means_none` (all.dims / any.dims). A 0-dim input
// accepts dim 0 / -1 and reduces nothing.
std::vector<int64_t> reduced_dims(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                  bool empty_means_none = false) {
  const int64_t rank = self.dim();
  std::vector<int64_t> dims;
  if (dim.has_value() && dim->empty() && empty_means_none) return dims;
  if (dim.has_value() && !dim->empty()) {
    auto mask = at::dim_list_to_bitset(dim, static_cast<size_t>(rank));  // checks range and repeats
    for (int64_t d = 0; d < rank; ++d) {
      if (mask[d]) dims.push_back(d);
    }
    return dims;
  }
  for (int64_t d = 0; d < rank; ++d) dims.push_back(d);
  return dims;
}

std::vector<int64_t> one_dim(const at::Tensor& self, int64_t dim) {
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  return self.dim() == 0 ? std::vector<int64_t>{} : std::vector<int64_t>{d};
}

std::vector<int64_t> result_shape(const at::Tensor& self, const std::vector<int64_t>& dims, bool keepdim) {
  return ops::reduced_shape(self.sizes().vec(), dims, keepdim);
}

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& key, double v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }
void put(std::string& key, ElementType t) { key.push_back(static_cast<char>(t)); }

std::string key_of(char tag, const std::vector<int64_t>& dims, bool keepdim) {
  std::string key(1, tag);
  key.push_back(keepdim ? 'k' : '-');
  put(key, static_cast<int64_t>(dims.size()));
  for (int64_t d : dims) put(key, d);
  return key;
}

// ---- running -----------------------------------------------------------------

using Lower = std::function<std::vector<hlo::Value>(hlo::Builder&, const hlo::Value&)>;

LoweringBody body_of(Lower lower) {
  return [lower = std::move(lower)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                    const std::vector<hlo::Value>&) { return lower(b, t[0]); };
}

std::vector<at::Tensor> run(const char* name, std::string key, const at::Tensor& self, Lower lower) {
  return run_op(OpCall{name, std::move(key), {self}, {}}, body_of(std::move(lower)));
}

// Writes the single result into `out` (resized to `shape` first). An out
// that is also the input (torch.logsumexp(a, 1, out=a)) is read as it was
// before the resize, through an alias the resize leaves alone.
void run_into(const char* name, std::string key, const at::Tensor& self, Lower lower, const at::Tensor& out,
              const std::vector<int64_t>& shape) {
  const at::Tensor input = out.is_same(self) ? self.alias() : self;
  at::native::resize_output(out, shape);
  run_op_into(OpCall{name, std::move(key), {input}, {}}, body_of(std::move(lower)), out);
}

// Raises CPU's IndexError when a reduced dim of an empty tensor is empty
// (reductions without an identity: max, min, argmax, ...).
void check_nonzero_dims(const at::Tensor& self, const std::vector<int64_t>& dims, const char* fn) {
  if (self.numel() != 0) return;
  for (int64_t d : dims) {
    TORCH_CHECK_INDEX(self.size(d) != 0, fn, ": Expected reduction dim ", d, " to have non-zero size.");
  }
}

void check_not_complex(const at::Tensor& self, const char* fn) {
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), fn, ": not implemented for '", self.scalar_type(), "'");
}

// ---- sum, nansum, prod -------------------------------------------------------

// Integers and bool accumulate (and return) int64 unless a dtype is given.
c10::ScalarType sum_dtype(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  if (dtype) return *dtype;
  return c10::isIntegralType(self.scalar_type(), /*includeBool=*/true) ? c10::kLong : self.scalar_type();
}

const char* kind_name(ReduceKind kind) {
  switch (kind) {
    case ReduceKind::kSum: return "aten::sum";
    case ReduceKind::kNanSum: return "aten::nansum";
    case ReduceKind::kProd: return "aten::prod";
    case ReduceKind::kMax: return "aten::amax";
    case ReduceKind::kMin: return "aten::amin";
    case ReduceKind::kAll: return "aten::all";
    case ReduceKind::kAny: return "aten::any";
    case ReduceKind::kXor: return "aten::hash_tensor";
  }
  return "?";
}

// A reduction computed in (and returning) `dtype`; into `out` when given.
at::Tensor accumulate(ReduceKind kind, const at::Tensor& self, std::vector<int64_t> dims, bool keepdim,
                      c10::ScalarType dtype, const at::Tensor* out) {
  const char* name = kind_name(kind);
  const ElementType result = to_element_type(dtype, name);
  const ElementType acc = ops::accumulation_type(result);
  std::string key = key_of(static_cast<char>(kind), dims, keepdim);
  put(key, result);
  auto shape = result_shape(self, dims, keepdim);
  Lower lower = [kind, dims, keepdim, acc, result](hlo::Builder& b, const hlo::Value& x) {
    return std::vector<hlo::Value>{ops::lower_reduce(b, x, kind, dims, keepdim, acc, result)};
  };
  if (!out) return run(name, std::move(key), self, std::move(lower)).at(0);
  run_into(name, std::move(key), self, std::move(lower), *out, shape);
  return *out;
}

at::Tensor sum_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<c10::ScalarType> dtype) {
  return accumulate(ReduceKind::kSum, self, reduced_dims(self, dim), keepdim, sum_dtype(self, dtype), nullptr);
}

at::Tensor& sum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  if (dtype) check_out_dtype(out, *dtype);
  accumulate(ReduceKind::kSum, self, reduced_dims(self, dim), keepdim, out.scalar_type(), &out);
  return out;
}

void check_nansum_input(const at::Tensor& self) {
  TORCH_CHECK(!self.is_complex(), "nansum does not support complex inputs");
}

at::Tensor nansum(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                  std::optional<c10::ScalarType> dtype) {
  check_nansum_input(self);
  return accumulate(ReduceKind::kNanSum, self, reduced_dims(self, dim), keepdim, sum_dtype(self, dtype),
                    nullptr);
}

at::Tensor& nansum_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  check_nansum_input(self);
  if (dtype) check_out_dtype(out, *dtype);
  accumulate(ReduceKind::kNanSum, self, reduced_dims(self, dim), keepdim, out.scalar_type(), &out);
  return out;
}

at::Tensor prod(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  return accumulate(ReduceKind::kProd, self, reduced_dims(self, std::nullopt), false, sum_dtype(self, dtype),
                    nullptr);
}

at::Tensor& prod_out(const at::Tensor& self, std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  if (dtype) check_out_dtype(out, *dtype);
  accumulate(ReduceKind::kProd, self, reduced_dims(self, std::nullopt), false, out.scalar_type(), &out);
  return out;
}

at::Tensor prod_dim(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype) {
  return accumulate(ReduceKind::kProd, self, one_dim(self, dim), keepdim, sum_dtype(self, dtype), nullptr);
}

at::Tensor& prod_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, std::optional<c10::ScalarType> dtype,
                         at::Tensor& out) {
  if (dtype) check_out_dtype(out, *dtype);
  accumulate(ReduceKind::kProd, self, one_dim(self, dim), keepdim, out.scalar_type(), &out);
  return out;
}

// ---- mean --------------------------------------------------------------------

c10::ScalarType mean_dtype(const at::Tensor& self, std::optional<c10::ScalarType> dtype) {
  if (dtype) {
    TORCH_CHECK(c10::isFloatingType(*dtype) || c10::isComplexType(*dtype),
                "mean(): could not infer output dtype. Optional dtype must be either a floating point or "
                "complex dtype. Got: ", *dtype);
    return *dtype;
  }
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t),
              "mean(): could not infer output dtype. Input dtype must be either a floating point or complex "
              "dtype. Got: ", t);
  return t;
}

at::Tensor mean_impl(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, c10::ScalarType dtype,
                     const at::Tensor* out) {
  const ElementType result = to_element_type(dtype, "aten::mean");
  auto dims = reduced_dims(self, dim);
  std::string key = key_of('m', dims, keepdim);
  put(key, result);
  Lower lower = [dims, keepdim, result](hlo::Builder& b, const hlo::Value& x) {
    return std::vector<hlo::Value>{ops::lower_mean(b, x, dims, keepdim, result)};
  };
  if (!out) return run("aten::mean", std::move(key), self, std::move(lower)).at(0);
  run_into("aten::mean", std::move(key), self, std::move(lower), *out, result_shape(self, dims, keepdim));
  return *out;
}

at::Tensor mean_dim(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<c10::ScalarType> dtype) {
  return mean_impl(self, dim, keepdim, mean_dtype(self, dtype), nullptr);
}

at::Tensor& mean_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                     std::optional<c10::ScalarType> dtype, at::Tensor& out) {
  const c10::ScalarType t = mean_dtype(self, dtype);
  if (dtype) check_out_dtype(out, t);
  TORCH_CHECK(c10::isFloatingType(out.scalar_type()) || c10::isComplexType(out.scalar_type()),
              "mean(): the out tensor must have a floating point or complex dtype, got ", out.scalar_type());
  mean_impl(self, dim, keepdim, out.scalar_type(), &out);
  return out;
}

// ---- amax, amin, max(), min() ------------------------------------------------

at::Tensor extremum(bool is_max, const at::Tensor& self, std::vector<int64_t> dims, bool keepdim,
                    const at::Tensor* out) {
  return accumulate(is_max ? ReduceKind::kMax : ReduceKind::kMin, self, std::move(dims), keepdim,
                    self.scalar_type(), out);
}

at::Tensor amax_like(bool is_max, const at::Tensor& self, at::IntArrayRef dim, bool keepdim,
                     const at::Tensor* out) {
  const char* fn = is_max ? "amax()" : "amin()";
  check_not_complex(self, fn);
  TORCH_CHECK(!dim.empty() || self.numel() > 0, fn,
              ": Expected reduction dim to be specified for input.numel() == 0. Specify the reduction dim with "
              "the 'dim' argument.");
  auto dims = reduced_dims(self, dim);
  check_nonzero_dims(self, dims, fn);
  if (out) {
    TORCH_CHECK(out->scalar_type() == self.scalar_type(), "Expected the dtype for input and out to match, but got ",
                self.scalar_type(), " for input's dtype and ", out->scalar_type(), " for out's dtype.");
  }
  return extremum(is_max, self, std::move(dims), keepdim, out);
}

at::Tensor amax(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return amax_like(true, self, dim, keepdim, nullptr);
}
at::Tensor& amax_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  amax_like(true, self, dim, keepdim, &out);
  return out;
}
at::Tensor amin(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  return amax_like(false, self, dim, keepdim, nullptr);
}
at::Tensor& amin_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  amax_like(false, self, dim, keepdim, &out);
  return out;
}

at::Tensor max_all_like(bool is_max, const at::Tensor& self, const at::Tensor* out) {
  const char* fn = is_max ? "max()" : "min()";
  check_not_complex(self, fn);
  TORCH_CHECK(self.numel() > 0, fn, ": Expected reduction dim to be specified for input.numel() == 0. ",
              "Specify the reduction dim with the 'dim' argument.");
  return extremum(is_max, self, reduced_dims(self, std::nullopt), false, out);
}

at::Tensor max_all(const at::Tensor& self) { return max_all_like(true, self, nullptr); }
at::Tensor& max_all_out(const at::Tensor& self, at::Tensor& out) {
  max_all_like(true, self, &out);
  return out;
}
at::Tensor min_all(const at::Tensor& self) { return max_all_like(false, self, nullptr); }
at::Tensor& min_all_out(const at::Tensor& self, at::Tensor& out) {
  max_all_like(false, self, &out);
  return out;
}

// ---- max.dim, min.dim, argmax, argmin ----------------------------------------

std::tuple<at::Tensor, at::Tensor> max_dim_like(bool is_max, const at::Tensor& self, int64_t dim, bool keepdim) {
  const char* fn = is_max ? "max()" : "min()";
  TORCH_CHECK(!self.is_complex(), fn, ": does not support complex input");
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  if (self.dim() > 0) check_nonzero_dims(self, {d}, fn);
  std::string key = key_of(is_max ? '>' : '<', {d}, keepdim);
  auto results = run(is_max ? "aten::max" : "aten::min", std::move(key), self,
                     [d, keepdim, is_max](hlo::Builder& b, const hlo::Value& x) {
                       auto [values, indices] = ops::lower_max_min_dim(b, x, d, keepdim, is_max);
                       return std::vector<hlo::Value>{values, indices};
                     });
  return {results.at(0), results.at(1)};
}

std::tuple<at::Tensor&, at::Tensor&> max_dim_out_like(bool is_max, const at::Tensor& self, int64_t dim, bool keepdim,
                                                     at::Tensor& values, at::Tensor& indices) {
  check_out_dtype(values, self.scalar_type());
  check_out_dtype(indices, c10::kLong);
  auto [v, i] = max_dim_like(is_max, self, dim, keepdim);
  check_out_device(values, v);
  check_out_device(indices, i);
  at::native::resize_output(values, v.sizes());
  at::native::resize_output(indices, i.sizes());
  values.copy_(v);
  indices.copy_(i);
  return {values, indices};
}

std::tuple<at::Tensor, at::Tensor> max_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return max_dim_like(true, self, dim, keepdim);
}
std::tuple<at::Tensor&, at::Tensor&> max_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& v,
                                                at::Tensor& i) {
  return max_dim_out_like(true, self, dim, keepdim, v, i);
}
std::tuple<at::Tensor, at::Tensor> min_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return max_dim_like(false, self, dim, keepdim);
}
std::tuple<at::Tensor&, at::Tensor&> min_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& v,
                                                at::Tensor& i) {
  return max_dim_out_like(false, self, dim, keepdim, v, i);
}

at::Tensor argmax_like(bool is_max, const at::Tensor& self, std::optional<int64_t> dim, bool keepdim,
                       const at::Tensor* out) {
  const char* fn = is_max ? "argmax()" : "argmin()";
  const char* name = is_max ? "aten::argmax" : "aten::argmin";
  TORCH_CHECK(self.scalar_type() != c10::kBool, fn, ": does not support bool input");
  TORCH_CHECK(!self.is_complex(), fn, ": does not support complex input");
  std::optional<int64_t> d;
  std::vector<int64_t> shape;
  if (dim) {
    d = at::maybe_wrap_dim(*dim, self.dim());
    if (self.dim() > 0) {
      check_nonzero_dims(self, {*d}, fn);
    } else {
      d = 0;
    }
    shape = self.dim() == 0 ? std::vector<int64_t>{} : result_shape(self, {*d}, keepdim);
  } else {
    TORCH_CHECK_INDEX(self.numel() != 0, fn, ": Expected reduction dim to be specified for input.numel() == 0.");
    if (keepdim) shape.assign(static_cast<size_t>(self.dim()), 1);
  }
  std::string key = key_of(is_max ? '>' : '<', d ? std::vector<int64_t>{*d} : std::vector<int64_t>{}, keepdim);
  key.push_back(d ? 'd' : 'a');
  Lower lower = [d, keepdim, is_max](hlo::Builder& b, const hlo::Value& x) {
    return std::vector<hlo::Value>{ops::lower_arg_max_min(b, x, d, keepdim, is_max)};
  };
  if (!out) return run(name, std::move(key), self, std::move(lower)).at(0);
  check_out_dtype(*out, c10::kLong);
  run_into(name, std::move(key), self, std::move(lower), *out, shape);
  return *out;
}

at::Tensor argmax(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return argmax_like(true, self, dim, keepdim, nullptr);
}
at::Tensor& argmax_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  argmax_like(true, self, dim, keepdim, &out);
  return out;
}
at::Tensor argmin(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim) {
  return argmax_like(false, self, dim, keepdim, nullptr);
}
at::Tensor& argmin_out(const at::Tensor& self, std::optional<int64_t> dim, bool keepdim, at::Tensor& out) {
  argmax_like(false, self, dim, keepdim, &out);
  return out;
}

// ---- all, any ----------------------------------------------------------------

// uint8 inputs give uint8 results, as on CPU; everything else gives bool.
at::Tensor all_any(bool is_all, const at::Tensor& self, std::vector<int64_t> dims, bool keepdim,
                   const at::Tensor* out) {
  const ReduceKind kind = is_all ? ReduceKind::kAll : ReduceKind::kAny;
  if (out) {
    TORCH_CHECK(out->scalar_type() == c10::kBool || out->scalar_type() == c10::kByte, is_all ? "all" : "any",
                " only supports bool tensor for result, got: ", out->scalar_type());
    return accumulate(kind, self, std::move(dims), keepdim, out->scalar_type(), out);
  }
  const c10::ScalarType t = self.scalar_type() == c10::kByte ? c10::kByte : c10::kBool;
  return accumulate(kind, self, std::move(dims), keepdim, t, nullptr);
}

at::Tensor all(const at::Tensor& self) { return all_any(true, self, reduced_dims(self, std::nullopt), false, nullptr); }
at::Tensor& all_out(const at::Tensor& self, at::Tensor& out) {
  all_any(true, self, reduced_dims(self, std::nullopt), false, &out);
  return out;
}
at::Tensor all_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return all_any(true, self, one_dim(self, dim), keepdim, nullptr);
}
at::Tensor& all_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  all_any(true, self, one_dim(self, dim), keepdim, &out);
  return out;
}
at::Tensor all_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return all_any(true, self, reduced_dims(self, dim, /*empty_means_none=*/true), keepdim, nullptr);
}
at::Tensor& all_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  all_any(true, self, reduced_dims(self, dim, /*empty_means_none=*/true), keepdim, &out);
  return out;
}
at::Tensor any(const at::Tensor& self) { return all_any(false, self, reduced_dims(self, std::nullopt), false, nullptr); }
at::Tensor& any_out(const at::Tensor& self, at::Tensor& out) {
  all_any(false, self, reduced_dims(self, std::nullopt), false, &out);
  return out;
}
at::Tensor any_dim(const at::Tensor& self, int64_t dim, bool keepdim) {
  return all_any(false, self, one_dim(self, dim), keepdim, nullptr);
}
at::Tensor& any_dim_out(const at::Tensor& self, int64_t dim, bool keepdim, at::Tensor& out) {
  all_any(false, self, one_dim(self, dim), keepdim, &out);
  return out;
}
at::Tensor any_dims(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim) {
  return all_any(false, self, reduced_dims(self, dim, /*empty_means_none=*/true), keepdim, nullptr);
}
at::Tensor& any_dims_out(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim, at::Tensor& out) {
  all_any(false, self, reduced_dims(self, dim, /*empty_means_none=*/true), keepdim, &out);
  return out;
}

// ---- hash_tensor -------------------------------------------------------------

// Mode 0 (the only one PyTorch has): the xor of the elements' 64-bit
// patterns, a uint64 result. Empty inputs are refused as on CPU.
at::Tensor hash_tensor_like(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode,
                            const at::Tensor* out) {
  TORCH_CHECK(mode == 0, "Unknown hash_tensor mode: ", mode);
  TORCH_CHECK_NOT_IMPLEMENTED(!self.is_complex(), "\"xor_sum\" not implemented for '", self.scalar_type(), "'");
  TORCH_CHECK(self.numel() != 0 || !dim.empty(),
              "hash_tensor: Expected reduction dim to be specified for input.numel() == 0. Specify the reduction "
              "dim with the 'dim' argument.");
  std::vector<int64_t> dims = reduced_dims(self, dim);
  check_nonzero_dims(self, dims, "hash_tensor");  // as CPU: xor has an identity, but CPU refuses
  if (out) check_out_dtype(*out, c10::kUInt64);
  return accumulate(ReduceKind::kXor, self, std::move(dims), keepdim, c10::kUInt64, out);
}

at::Tensor hash_tensor(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode) {
  return hash_tensor_like(self, dim, keepdim, mode, nullptr);
}
at::Tensor& hash_tensor_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, int64_t mode,
                            at::Tensor& out) {
  hash_tensor_like(self, dim, keepdim, mode, &out);
  return out;
}

// ---- var, std, var_mean, std_mean --------------------------------------------

struct VarCall {
  std::vector<int64_t> dims;
  double correction;
  ElementType result;  // real: var of a complex input is real
};

VarCall prepare_var(const at::Tensor& self, at::OptionalIntArrayRef dim,
                    const std::optional<c10::Scalar>& correction, const char* fn) {
  const c10::ScalarType t = self.scalar_type();
  TORCH_CHECK(c10::isFloatingType(t) || c10::isComplexType(t),
              "std and var only support floating point and complex dtypes");
  VarCall v{reduced_dims(self, dim), correction ? correction->toDouble() : 1.0,
            to_element_type(c10::toRealValueType(t), fn)};
  int64_t n = 1;
  for (int64_t d : v.dims) n *= self.size(d);
  if (static_cast<double>(n) - v.correction <= 0) {
    TORCH_WARN(fn, ": degrees of freedom is <= 0. Correction should be strictly less than the reduction factor "
               "(input numel divided by output numel).");
  }
  return v;
}

std::vector<at::Tensor> var_impl(bool take_sqrt, bool with_mean, const at::Tensor& self, at::OptionalIntArrayRef dim,
                                 const std::optional<c10::Scalar>& correction, bool keepdim) {
  const char* fn = take_sqrt ? "std()" : "var()";
  VarCall v = prepare_var(self, dim, correction, fn);
  std::string key = key_of(take_sqrt ? 's' : 'v', v.dims, keepdim);
  put(key, v.correction);
  put(key, v.result);
  key.push_back(with_mean ? 'm' : '-');
  return run(take_sqrt ? "aten::std" : "aten::var", std::move(key), self,
             [v, keepdim, take_sqrt, with_mean](hlo::Builder& b, const hlo::Value& x) {
               auto [var, mean] = ops::lower_var(b, x, v.dims, v.correction, keepdim, take_sqrt, with_mean, v.result);
               std::vector<hlo::Value> outs{var};
               if (mean) outs.push_back(*mean);
               return outs;
             });
}

at::Tensor& var_out_impl(bool take_sqrt, const at::Tensor& self, at::OptionalIntArrayRef dim,
                         const std::optional<c10::Scalar>& correction, bool keepdim, at::Tensor& out) {
  const char* fn = take_sqrt ? "std()" : "var()";
  VarCall v = prepare_var(self, dim, correction, fn);
  std::string key = key_of(take_sqrt ? 's' : 'v', v.dims, keepdim);
  put(key, v.correction);
  put(key, v.result);
  run_into(take_sqrt ? "aten::std" : "aten::var", std::move(key), self,
           [v, keepdim, take_sqrt](hlo::Builder& b, const hlo::Value& x) {
             return std::vector<hlo::Value>{
                 ops::lower_var(b, x, v.dims, v.correction, keepdim, take_sqrt, false, v.result).first};
           },
           out, result_shape(self, v.dims, keepdim));
  return out;
}

at::Tensor var(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
               bool keepdim) {
  return var_impl(false, false, self, dim, correction, keepdim).at(0);
}
at::Tensor& var_out(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                    bool keepdim, at::Tensor& out) {
  return var_out_impl(false, self, dim, correction, keepdim, out);
}
at::Tensor std(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
               bool keepdim) {
  return var_impl(true, false, self, dim, correction, keepdim).at(0);
}
at::Tensor& std_out(const at::Tensor& self, at::OptionalIntArrayRef dim, const std::optional<c10::Scalar>& correction,
                    bool keepdim, at::Tensor& out) {
  return var_out_impl(true, self, dim, correction, keepdim, out);
}
std::tuple<at::Tensor, at::Tensor> var_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction, bool keepdim) {
  auto r = var_impl(false, true, self, dim, correction, keepdim);
  return {r.at(0), r.at(1)};
}
std::tuple<at::Tensor, at::Tensor> std_mean(const at::Tensor& self, at::OptionalIntArrayRef dim,
                                            const std::optional<c10::Scalar>& correction, bool keepdim) {
  auto r = var_impl(true, true, self, dim, correction, keepdim);
  return {r.at(0), r.at(1)};
}

// ---- logsumexp ---------------------------------------------------------------

at::Tensor logsumexp_impl(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, c10::ScalarType dtype,
                          const at::Tensor* out) {
  // CPU's composite reduces every dim for dim=[], and fails (an in-place
  // broadcast) unless the result keeps them.
  TORCH_CHECK(!dim.empty() || self.dim() == 0 || keepdim,
              "logsumexp(): dim=[] without keepdim is not supported for a tensor with dimensions (as on CPU)");
  const ElementType result = to_element_type(dtype, "aten::logsumexp");
  auto dims = reduced_dims(self, dim);
  std::string key = key_of('l', dims, keepdim);
  put(key, result);
  Lower lower = [dims, keepdim, result](hlo::Builder& b, const hlo::Value& x) {
    return std::vector<hlo::Value>{ops::lower_logsumexp(b, x, dims, keepdim, result)};
  };
  if (!out) return run("aten::logsumexp", std::move(key), self, std::move(lower)).at(0);
  run_into("aten::logsumexp", std::move(key), self, std::move(lower), *out, result_shape(self, dims, keepdim));
  return *out;
}

at::Tensor logsumexp(const at::Tensor& self, at::IntArrayRef dim, bool keepdim) {
  const c10::ScalarType t = c10::isIntegralType(self.scalar_type(), /*includeBool=*/true)
                                ? c10::typeMetaToScalarType(c10::get_default_dtype())
                                : self.scalar_type();
  return logsumexp_impl(self, dim, keepdim, t, nullptr);
}

at::Tensor& logsumexp_out(const at::Tensor& self, at::IntArrayRef dim, bool keepdim, at::Tensor& out) {
  TORCH_CHECK(c10::isFloatingType(out.scalar_type()) || c10::isComplexType(out.scalar_type()),
              "logsumexp(): Expected floating point type for result tensor, but got: ", out.scalar_type());
  logsumexp_impl(self, dim, keepdim, out.scalar_type(), &out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("sum.dim_IntList", sum_dim);
  m.impl("sum.IntList_out", sum_out);
  m.impl("nansum", nansum);
  m.impl("nansum.out", nansum_out);
  m.impl("prod", prod);
  m.impl("prod.out", prod_out);
  m.impl("prod.dim_int", prod_dim);
  m.impl("prod.int_out", prod_dim_out);
  m.impl("mean.dim", mean_dim);
  m.impl("mean.out", mean_out);
  m.impl("hash_tensor", hash_tensor);
  m.impl("hash_tensor.out", hash_tensor_out);
  m.impl("amax", amax);
  m.impl("amax.out", amax_out);
  m.impl("amin", amin);
  m.impl("amin.out", amin_out);
  m.impl("max", max_all);
  m.impl("max.unary_out", max_all_out);
  m.impl("min", min_all);
  m.impl("min.unary_out", min_all_out);
  m.impl("max.dim", max_dim);
  m.impl("max.dim_max", max_dim_out);
  m.impl("min.dim", min_dim);
  m.impl("min.dim_min", min_dim_out);
  m.impl("argmax", argmax);
  m.impl("argmax.out", argmax_out);
  m.impl("argmin", argmin);
  m.impl("argmin.out", argmin_out);
  m.impl("all", all);
  m.impl("all.all_out", all_out);
  m.impl("all.dim", all_dim);
  m.impl("all.out", all_dim_out);
  m.impl("all.dims", all_dims);
  m.impl("all.dims_out", all_dims_out);
  m.impl("any", any);
  m.impl("any.all_out", any_out);
  m.impl("any.dim", any_dim);
  m.impl("any.out", any_dim_out);
  m.impl("any.dims", any_dims);
  m.impl("any.dims_out", any_dims_out);
  m.impl("var.correction", var);
  m.impl("var.correction_out", var_out);
  m.impl("std.correction", std);
  m.impl("std.correction_out", std_out);
  m.impl("var_mean.correction", var_mean);
  m.impl("std_mean.correction", std_mean);
  m.impl("logsumexp", logsumexp);
  m.impl("logsumexp.out", logsumexp_out);
}

}  // namespace torch_tpu::aten
