// ATen glue for pooling: max_pool2d/3d_with_indices, avg_pool2d/3d,
// _adaptive_avg_pool2d/3d and adaptive_max_pool2d/3d with their backward
// ops. F.max_pool1d/2d/3d, F.avg_pool1d, F.adaptive_avg_pool1d/2d/3d and
// F.adaptive_max_pool1d are composite in ATen and reach these. Shapes are
// checked with ATen's own pooling checks (ATen/native/Pool.h), so errors
// read as on CPU. Lowerings: csrc/ops/nn/pooling.cc.
#include <ATen/TensorUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Pool.h>
#include <ATen/ops/empty.h>
#include <ATen/ops/zeros.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <limits>
#include <string>
#include <tuple>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/nn/pooling.h"

namespace torch_tpu::aten {

namespace {

void put(std::string& key, int64_t v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); }

void put_window(std::string& key, const ops::PoolWindow& w) {
  for (const auto* v : {&w.kernel, &w.stride, &w.padding, &w.dilation, &w.output}) {
    for (int64_t x : *v) put(key, x);
  }
}

std::vector<int64_t> sizes_of(const at::Tensor& t) { return t.sizes().vec(); }

enum class Kind { kMax, kAvg };

// ATen's parameter rules for max_pool{n}d / avg_pool{n}d: kernel of 1 or n
// ints, stride omitted (= kernel), 1 or n; padding and dilation 1 or n.
ops::PoolWindow pool_window(Kind kind, int64_t n, const at::Tensor& input, at::IntArrayRef kernel_size,
                            at::IntArrayRef stride, at::IntArrayRef padding, at::IntArrayRef dilation,
                            bool ceil_mode) {
  const char* name = kind == Kind::kMax ? (n == 2 ? "max_pool2d" : "max_pool3d")
                                        : (n == 2 ? "avg_pool2d" : "avg_pool3d");
  const char* count = n == 2 ? "two" : "three";
  auto one_or_n = [&](at::IntArrayRef v, bool may_be_empty, const char* what) {
    const bool ok = v.size() == 1 || static_cast<int64_t>(v.size()) == n || (may_be_empty && v.empty());
    TORCH_CHECK(ok, name, ": ", what, " must ", may_be_empty ? "either be omitted, a single int, or" : "either be a single int, or",
                " a tuple of ", count, " ints");
  };
  one_or_n(kernel_size, false, "kernel_size");
  one_or_n(stride, true, "stride");
  one_or_n(padding, false, "padding");
  one_or_n(dilation, false, "dilation");
  ops::PoolWindow w;
  for (int64_t i = 0; i < n; ++i) {
    // CPU's kernels take each as an int (safe_downcast): 2**32 + 1 must
    // fail as there, not wrap.
    auto pick = [i, name](at::IntArrayRef v) {
      const int64_t x = v.size() == 1 ? v[0] : v[i];
      TORCH_CHECK(x >= std::numeric_limits<int>::min() && x <= std::numeric_limits<int>::max(), name,
                  ": value cannot be converted to type int without overflow");
      return x;
    };
    w.kernel.push_back(pick(kernel_size));
    w.stride.push_back(stride.empty() ? w.kernel.back() : pick(stride));
    w.padding.push_back(pick(padding));
    w.dilation.push_back(pick(dilation));
  }
  // CPU's wording, which PyTorch's module tests match, with the op and shape.
  TORCH_CHECK(input.dim() == n + 1 || input.dim() == n + 2, name, ": non-empty ", n + 1, "D or ", n + 2,
              "D (batch mode) tensor expected for input, but got: ", input.sizes());
  const int64_t lead = input.dim() - n;
  for (int64_t i = 0; i < n; ++i) {
    TORCH_CHECK(w.stride[i] != 0, "stride should not be zero");
    w.output.push_back(at::native::pooling_output_shape<int64_t>(input.size(lead + i), w.kernel[i], w.padding[i],
                                                                 w.stride[i], w.dilation[i], ceil_mode));
  }
  const auto& k = w.kernel;
  const auto& s = w.stride;
  const auto& p = w.padding;
  const auto& d = w.dilation;
  const auto& o = w.output;
  if (n == 2) {
    at::native::pool2d_shape_check(input, k[0], k[1], s[0], s[1], p[0], p[1], d[0], d[1], input.size(-3),
                                   input.size(-2), input.size(-1), o[0], o[1], input.suggest_memory_format());
  } else {
    at::native::pool3d_shape_check(input, input.size(-4), k[0], k[1], k[2], s[0], s[1], s[2], p[0], p[1], p[2], d[0],
                                   d[1], d[2], input.size(-3), input.size(-2), input.size(-1), o[0], o[1], o[2], name,
                                   /*check_input_size=*/kind == Kind::kAvg);
  }
  return w;
}

void check_grad_shape(const at::Tensor& grad, const at::Tensor& input, const std::vector<int64_t>& output,
                      const char* op) {
  std::vector<int64_t> expected = sizes_of(input);
  for (size_t i = 0; i < output.size(); ++i) expected[expected.size() - output.size() + i] = output[i];
  TORCH_CHECK(grad.sizes() == at::IntArrayRef(expected), op, ": expected grad_output of size ",
              at::IntArrayRef(expected), ", but got ", grad.sizes());
}

void check_dtype(const at::Tensor& t, const char* kernel, bool integers, bool long_only = false) {
  const c10::ScalarType s = t.scalar_type();
  const bool ok = c10::isFloatingType(s) || (integers && c10::isIntegralType(s, false) &&
                                             (!long_only || s == at::kLong));
  TORCH_CHECK_NOT_IMPLEMENTED(ok, "\"", kernel, "\" not implemented for '", c10::toString(s), "'");
  to_element_type(s, kernel);
}

// A batched input's memory format carries over to the result, as CPU's
// kernels and the shape functions allocate it: for every 2-D pool, and of
// the 3-D ones for max pooling only (`keeps_3d`); an unbatched input's
// never does.
at::Tensor pooled_layout(const at::Tensor& result, const at::Tensor& self, int64_t n, bool keeps_3d = false) {
  return self.dim() == n + 2 && (n == 2 || keeps_3d) ? in_memory_format_of(result, self) : result;
}

// ---- max pooling -------------------------------------------------------------

std::tuple<at::Tensor, at::Tensor> max_pool(int64_t n, const at::Tensor& self, at::IntArrayRef kernel_size,
                                            at::IntArrayRef stride, at::IntArrayRef padding,
                                            at::IntArrayRef dilation, bool ceil_mode) {
  const ops::PoolWindow w = pool_window(Kind::kMax, n, self, kernel_size, stride, padding, dilation, ceil_mode);
  check_dtype(self, n == 2 ? "max_pool2d" : "max_pool3d", true);
  std::string attributes;
  put_window(attributes, w);
  OpCall call{n == 2 ? "aten::max_pool2d_with_indices" : "aten::max_pool3d_with_indices", std::move(attributes),
              {self}, {}};
  auto out = run_op(call, [w](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto [values, indices] = ops::lower_max_pool(b, t[0], w);
    return std::vector<hlo::Value>{values, indices};
  });
  return {pooled_layout(out.at(0), self, n, true), pooled_layout(out.at(1), self, n, true)};
}

at::Tensor max_pool_backward(int64_t n, const at::Tensor& grad_output, const at::Tensor& self,
                             at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                             at::IntArrayRef dilation, bool ceil_mode, const at::Tensor& indices) {
  const char* op = n == 2 ? "max_pool2d_with_indices_backward" : "max_pool3d_with_indices_backward";
  const ops::PoolWindow w = pool_window(Kind::kMax, n, self, kernel_size, stride, padding, dilation, ceil_mode);
  check_dtype(grad_output, op, false);
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), op, ": expected grad_output of dtype ",
              self.scalar_type(), ", but got ", grad_output.scalar_type());
  TORCH_CHECK(indices.scalar_type() == at::kLong, op, ": expected indices of dtype Long, but got ",
              indices.scalar_type());
  check_grad_shape(grad_output, self, w.output, op);
  check_grad_shape(indices, self, w.output, op);
  std::string attributes;
  put_window(attributes, w);
  for (int64_t s : self.sizes()) put(attributes, s);
  OpCall call{n == 2 ? "aten::max_pool2d_with_indices_backward" : "aten::max_pool3d_with_indices_backward",
              std::move(attributes), {grad_output, indices}, {}};
  const std::vector<int64_t> in = sizes_of(self);
  return pooled_layout(run_op(call, [in, n](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_max_pool_backward(b, t[0], t[1], in, n)};
  }).at(0), self, n, true);
}

std::tuple<at::Tensor, at::Tensor> max_pool2d_with_indices(const at::Tensor& self, at::IntArrayRef k,
                                                           at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d,
                                                           bool ceil_mode) {
  return max_pool(2, self, k, s, p, d, ceil_mode);
}
std::tuple<at::Tensor, at::Tensor> max_pool3d_with_indices(const at::Tensor& self, at::IntArrayRef k,
                                                           at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d,
                                                           bool ceil_mode) {
  return max_pool(3, self, k, s, p, d, ceil_mode);
}
at::Tensor max_pool2d_with_indices_backward(const at::Tensor& g, const at::Tensor& self, at::IntArrayRef k,
                                            at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d, bool ceil_mode,
                                            const at::Tensor& indices) {
  return max_pool_backward(2, g, self, k, s, p, d, ceil_mode, indices);
}
at::Tensor max_pool3d_with_indices_backward(const at::Tensor& g, const at::Tensor& self, at::IntArrayRef k,
                                            at::IntArrayRef s, at::IntArrayRef p, at::IntArrayRef d, bool ceil_mode,
                                            const at::Tensor& indices) {
  return max_pool_backward(3, g, self, k, s, p, d, ceil_mode, indices);
}

// ---- average pooling ---------------------------------------------------------

std::string avg_key(const ops::PoolWindow& w, bool count_include_pad, std::optional<int64_t> divisor) {
  std::string key;
  put_window(key, w);
  key.push_back(count_include_pad ? 'c' : '-');
  put(key, divisor.value_or(0));
  return key;
}

at::Tensor avg_pool(int64_t n, const at::Tensor& self, at::IntArrayRef kernel_size, at::IntArrayRef stride,
                    at::IntArrayRef padding, bool ceil_mode, bool count_include_pad,
                    std::optional<int64_t> divisor_override) {
  const ops::PoolWindow w = pool_window(Kind::kAvg, n, self, kernel_size, stride, padding, {1}, ceil_mode);
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  check_dtype(self, n == 2 ? "avg_pool2d" : "avg_pool3d", true, /*long_only=*/true);
  OpCall call{n == 2 ? "aten::avg_pool2d" : "aten::avg_pool3d", avg_key(w, count_include_pad, divisor_override),
              {self}, {}};
  return pooled_layout(run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_avg_pool(b, t[0], w, count_include_pad, divisor_override)};
  }).at(0), self, n);
}

at::Tensor avg_pool_backward(int64_t n, const at::Tensor& grad_output, const at::Tensor& self,
                             at::IntArrayRef kernel_size, at::IntArrayRef stride, at::IntArrayRef padding,
                             bool ceil_mode, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const char* op = n == 2 ? "avg_pool2d_backward" : "avg_pool3d_backward";
  const ops::PoolWindow w = pool_window(Kind::kAvg, n, self, kernel_size, stride, padding, {1}, ceil_mode);
  TORCH_CHECK(!divisor_override.has_value() || divisor_override.value() != 0, "divisor must be not zero");
  check_dtype(grad_output, op, true, /*long_only=*/true);
  check_grad_shape(grad_output, self, w.output, op);
  std::string attributes = avg_key(w, count_include_pad, divisor_override);
  for (int64_t s : self.sizes()) put(attributes, s);
  OpCall call{n == 2 ? "aten::avg_pool2d_backward" : "aten::avg_pool3d_backward", std::move(attributes),
              {grad_output}, {}};
  const std::vector<int64_t> in = sizes_of(self);
  return pooled_layout(run_op(call, [=](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{
        ops::lower_avg_pool_backward(b, t[0], in, w, count_include_pad, divisor_override)};
  }).at(0), self, n);
}

at::Tensor avg_pool2d(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef p, bool ceil_mode,
                      bool count_include_pad, std::optional<int64_t> divisor) {
  return avg_pool(2, self, k, s, p, ceil_mode, count_include_pad, divisor);
}
at::Tensor avg_pool3d(const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s, at::IntArrayRef p, bool ceil_mode,
                      bool count_include_pad, std::optional<int64_t> divisor) {
  return avg_pool(3, self, k, s, p, ceil_mode, count_include_pad, divisor);
}
at::Tensor avg_pool2d_backward(const at::Tensor& g, const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s,
                               at::IntArrayRef p, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor) {
  return avg_pool_backward(2, g, self, k, s, p, ceil_mode, count_include_pad, divisor);
}
at::Tensor avg_pool3d_backward(const at::Tensor& g, const at::Tensor& self, at::IntArrayRef k, at::IntArrayRef s,
                               at::IntArrayRef p, bool ceil_mode, bool count_include_pad,
                               std::optional<int64_t> divisor) {
  return avg_pool_backward(3, g, self, k, s, p, ceil_mode, count_include_pad, divisor);
}

// ---- adaptive pooling --------------------------------------------------------

std::vector<int64_t> adaptive_output(int64_t n, const at::Tensor& self, at::IntArrayRef output_size,
                                     const char* name) {
  TORCH_CHECK(static_cast<int64_t>(output_size.size()) == n, name, ": output_size must be ", n);
  TORCH_CHECK(self.dim() == n + 1 || self.dim() == n + 2, name, "(): Expected ", n + 1, "D or ", n + 2,
              "D tensor, but got ", self.sizes());
  for (int64_t i = self.dim() - n; i < self.dim(); ++i) {
    TORCH_CHECK(self.size(i) > 0, name, "(): Expected input to have non-zero size for non-batch dimensions, ",
                "but input has sizes ", self.sizes(), " with dimension ", i, " being empty");
  }
  for (int64_t o : output_size) {
    TORCH_CHECK(o >= 0, name, ": elements of output_size must be greater than or equal to 0 but received {",
                output_size, "}");
  }
  return output_size.vec();
}

std::vector<int64_t> with_output(const at::Tensor& self, const std::vector<int64_t>& output) {
  std::vector<int64_t> dims = sizes_of(self);
  for (size_t i = 0; i < output.size(); ++i) dims[dims.size() - output.size() + i] = output[i];
  return dims;
}

bool is_empty(const std::vector<int64_t>& dims) {
  for (int64_t d : dims) {
    if (d == 0) return true;
  }
  return false;
}

at::Tensor adaptive_avg_pool(int64_t n, const at::Tensor& self, c10::SymIntArrayRef output_sym) {
  const char* name = n == 2 ? "adaptive_avg_pool2d" : "adaptive_avg_pool3d";
  const std::vector<int64_t> output = adaptive_output(n, self, C10_AS_INTARRAYREF_SLOW(output_sym), name);
  check_dtype(self, name, false);
  const std::vector<int64_t> out_dims = with_output(self, output);
  if (is_empty(out_dims)) return at::empty(out_dims, self.options());
  std::string attributes;
  for (int64_t o : output) put(attributes, o);
  OpCall call{n == 2 ? "aten::_adaptive_avg_pool2d" : "aten::_adaptive_avg_pool3d", std::move(attributes), {self}, {}};
  return pooled_layout(run_op(call, [output](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_adaptive_avg_pool(b, t[0], output)};
  }).at(0), self, n);
}

at::Tensor adaptive_avg_pool_backward(int64_t n, const at::Tensor& grad_output, const at::Tensor& self) {
  const char* name = n == 2 ? "adaptive_avg_pool2d_backward" : "adaptive_avg_pool3d_backward";
  check_dtype(grad_output, name, false);
  TORCH_CHECK(grad_output.dim() == self.dim(), name, ": expected grad_output of rank ", self.dim(), ", got ",
              grad_output.sizes());
  TORCH_CHECK(self.dim() >= n, name, ": expected an input of at least ", n, " dims, got ", self.sizes());
  for (int64_t i = 0; i < self.dim() - n; ++i) {
    TORCH_CHECK(grad_output.size(i) == self.size(i), name, ": grad_output of size ", grad_output.sizes(),
                " does not match input of size ", self.sizes());
  }
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), name, ": expected dtype ", self.scalar_type(),
              " for `grad_output` but got dtype ", grad_output.scalar_type());
  const std::vector<int64_t> in = sizes_of(self);
  if (is_empty(in) || grad_output.numel() == 0) return at::zeros(in, self.options());
  std::string attributes;
  for (int64_t s : in) put(attributes, s);
  OpCall call{n == 2 ? "aten::_adaptive_avg_pool2d_backward" : "aten::_adaptive_avg_pool3d_backward",
              std::move(attributes), {grad_output}, {}};
  return pooled_layout(run_op(call, [in, n](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_adaptive_avg_pool_backward(b, t[0], in, n)};
  }).at(0), self, n);
}

std::tuple<at::Tensor, at::Tensor> adaptive_max_pool(int64_t n, const at::Tensor& self, at::IntArrayRef output_size) {
  const char* name = n == 2 ? "adaptive_max_pool2d" : "adaptive_max_pool3d";
  const std::vector<int64_t> output = adaptive_output(n, self, output_size, name);
  check_dtype(self, name, false);
  const std::vector<int64_t> out_dims = with_output(self, output);
  if (is_empty(out_dims)) {
    return {at::empty(out_dims, self.options()), at::empty(out_dims, self.options().dtype(at::kLong))};
  }
  std::string attributes;
  for (int64_t o : output) put(attributes, o);
  OpCall call{n == 2 ? "aten::adaptive_max_pool2d" : "aten::adaptive_max_pool3d", std::move(attributes), {self}, {}};
  auto out = run_op(call, [output](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    auto [values, indices] = ops::lower_adaptive_max_pool(b, t[0], output);
    return std::vector<hlo::Value>{values, indices};
  });
  return {pooled_layout(out.at(0), self, n), pooled_layout(out.at(1), self, n)};
}

at::Tensor adaptive_max_pool_backward(int64_t n, const at::Tensor& grad_output, const at::Tensor& self,
                                      const at::Tensor& indices) {
  const char* name = n == 2 ? "adaptive_max_pool2d_backward" : "adaptive_max_pool3d_backward";
  check_dtype(grad_output, name, false);
  TORCH_CHECK(grad_output.dim() == self.dim() && indices.sizes() == grad_output.sizes(), name,
              ": expected grad_output and indices of one shape and the input's rank, got ", grad_output.sizes(),
              " and ", indices.sizes(), " for input ", self.sizes());
  TORCH_CHECK(indices.scalar_type() == at::kLong, name, ": expected indices of dtype Long, but got ",
              indices.scalar_type());
  TORCH_CHECK(grad_output.scalar_type() == self.scalar_type(), name, ": expected dtype ", self.scalar_type(),
              " for `grad_output` but got dtype ", grad_output.scalar_type());
  const std::vector<int64_t> in = sizes_of(self);
  std::string attributes;
  for (int64_t s : in) put(attributes, s);
  OpCall call{n == 2 ? "aten::adaptive_max_pool2d_backward" : "aten::adaptive_max_pool3d_backward",
              std::move(attributes), {grad_output, indices}, {}};
  return pooled_layout(run_op(call, [in, n](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_max_pool_backward(b, t[0], t[1], in, n)};
  }).at(0), self, n);
}

at::Tensor adaptive_avg_pool2d(const at::Tensor& self, c10::SymIntArrayRef o) { return adaptive_avg_pool(2, self, o); }
at::Tensor adaptive_avg_pool3d(const at::Tensor& self, c10::SymIntArrayRef o) { return adaptive_avg_pool(3, self, o); }
at::Tensor adaptive_avg_pool2d_backward(const at::Tensor& g, const at::Tensor& self) {
  return adaptive_avg_pool_backward(2, g, self);
}
at::Tensor adaptive_avg_pool3d_backward(const at::Tensor& g, const at::Tensor& self) {
  return adaptive_avg_pool_backward(3, g, self);
}
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool2d(const at::Tensor& self, at::IntArrayRef o) {
  return adaptive_max_pool(2, self, o);
}
std::tuple<at::Tensor, at::Tensor> adaptive_max_pool3d(const at::Tensor& self, at::IntArrayRef o) {
  return adaptive_max_pool(3, self, o);
}
at::Tensor adaptive_max_pool2d_backward(const at::Tensor& g, const at::Tensor& self, const at::Tensor& i) {
  return adaptive_max_pool_backward(2, g, self, i);
}
at::Tensor adaptive_max_pool3d_backward(const at::Tensor& g, const at::Tensor& self, const at::Tensor& i) {
  return adaptive_max_pool_backward(3, g, self, i);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("max_pool2d_with_indices", max_pool2d_with_indices);
  m.impl("max_pool2d_with_indices_backward", max_pool2d_with_indices_backward);
  m.impl("max_pool3d_with_indices", max_pool3d_with_indices);
  m.impl("max_pool3d_with_indices_backward", max_pool3d_with_indices_backward);
  m.impl("avg_pool2d", avg_pool2d);
  m.impl("avg_pool2d_backward", avg_pool2d_backward);
  m.impl("avg_pool3d", avg_pool3d);
  m.impl("avg_pool3d_backward", avg_pool3d_backward);
  m.impl("_adaptive_avg_pool2d", adaptive_avg_pool2d);
  m.impl("_adaptive_avg_pool2d_backward", adaptive_avg_pool2d_backward);
  m.impl("_adaptive_avg_pool3d", adaptive_avg_pool3d);
  m.impl("_adaptive_avg_pool3d_backward", adaptive_avg_pool3d_backward);
  m.impl("adaptive_max_pool2d", adaptive_max_pool2d);
  m.impl("adaptive_max_pool2d_backward", adaptive_max_pool2d_backward);
  m.impl("adaptive_max_pool3d", adaptive_max_pool3d);
  m.impl("adaptive_max_pool3d_backward", adaptive_max_pool3d_backward);
}

}  // namespace torch_tpu::aten
