// ATen glue for _softmax / _log_softmax and their backward ops (what
// torch.softmax, F.log_softmax, cross_entropy and autograd call). The
// lowerings live in csrc/ops/reduction/softmax.cc.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/reduction/softmax.h"

namespace torch_tpu::aten {

namespace {

std::string key_of(int64_t dim, ElementType out) {
  std::string key(reinterpret_cast<const char*>(&dim), sizeof dim);
  key.push_back(static_cast<char>(out));
  return key;
}

// ---- forward -----------------------------------------------------------------

struct Forward {
  int64_t dim;
  c10::ScalarType out;
};

// half_to_float follows CUDA: a Half input gives a Float result.
Forward prepare_forward(const at::Tensor& self, int64_t dim, bool half_to_float, const char* fn) {
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"", fn, "\" not implemented for '",
                              self.scalar_type(), "'");
  if (half_to_float) {
    TORCH_CHECK(self.scalar_type() == c10::kHalf, fn, ": conversion is supported for Half type only");
  }
  const int64_t d = at::maybe_wrap_dim(dim, self.dim());
  return {self.dim() == 0 ? 0 : d, half_to_float ? c10::kFloat : self.scalar_type()};
}

at::Tensor forward(bool log, const at::Tensor& self, int64_t dim, bool half_to_float, const at::Tensor* out) {
  const char* name = log ? "aten::_log_softmax" : "aten::_softmax";
  Forward f = prepare_forward(self, dim, half_to_float, log ? "log_softmax" : "softmax");
  const ElementType result = to_element_type(f.out, name);
  OpCall call{name, key_of(f.dim, result), {self}, {}};
  auto body = [log, d = f.dim, result](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                       const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{log ? ops::lower_log_softmax(b, t[0], d, result)
                                       : ops::lower_softmax(b, t[0], d, result)};
  };
  if (!out) return run_op(call, body).at(0);
  TORCH_CHECK(out->scalar_type() == f.out, "Expected out tensor to have dtype ", f.out, ", but got ",
              out->scalar_type(), " instead");
  at::native::resize_output(*out, self.sizes());
  run_op_into(call, body, *out);
  return *out;
}

at::Tensor softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return forward(false, self, dim, half_to_float, nullptr);
}
at::Tensor& softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  forward(false, self, dim, half_to_float, &out);
  return out;
}
at::Tensor log_softmax(const at::Tensor& self, int64_t dim, bool half_to_float) {
  return forward(true, self, dim, half_to_float, nullptr);
}
at::Tensor& log_softmax_out(const at::Tensor& self, int64_t dim, bool half_to_float, at::Tensor& out) {
  forward(true, self, dim, half_to_float, &out);
  return out;
}

// ---- backward ----------------------------------------------------------------

at::Tensor backward(bool log, const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                    c10::ScalarType input_dtype, const at::Tensor* out) {
  const char* name = log ? "aten::_log_softmax_backward_data" : "aten::_softmax_backward_data";
  TORCH_CHECK(grad.sizes() == output.sizes(), name, ": grad_output of shape ", grad.sizes(),
              " does not match output of shape ", output.sizes());
  TORCH_CHECK(grad.scalar_type() == output.scalar_type(), name, ": expected grad_output and output of one dtype, got ",
              grad.scalar_type(), " and ", output.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(grad.scalar_type()), "\"", name, "\" not implemented for '",
                              grad.scalar_type(), "'");
  // The result has grad's dtype, except after a half_to_float forward.
  const c10::ScalarType dtype =
      (grad.scalar_type() == c10::kFloat && input_dtype == c10::kHalf) ? c10::kHalf : grad.scalar_type();
  const ElementType result = to_element_type(dtype, name);
  const int64_t wrapped = at::maybe_wrap_dim(dim, grad.dim());
  const int64_t d = grad.dim() == 0 ? 0 : wrapped;
  OpCall call{name, key_of(d, result), {grad, output}, {}};
  auto body = [log, d, result](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{log ? ops::lower_log_softmax_backward(b, t[0], t[1], d, result)
                                       : ops::lower_softmax_backward(b, t[0], t[1], d, result)};
  };
  if (!out) return run_op(call, body).at(0);
  TORCH_CHECK(out->scalar_type() == dtype, "Expected out tensor to have dtype ", dtype, ", but got ",
              out->scalar_type(), " instead");
  at::native::resize_output(*out, grad.sizes());
  run_op_into(call, body, *out);
  return *out;
}

at::Tensor softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                            c10::ScalarType input_dtype) {
  return backward(false, grad, output, dim, input_dtype, nullptr);
}
at::Tensor& softmax_backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                 c10::ScalarType input_dtype, at::Tensor& out) {
  backward(false, grad, output, dim, input_dtype, &out);
  return out;
}
at::Tensor log_softmax_backward(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                c10::ScalarType input_dtype) {
  return backward(true, grad, output, dim, input_dtype, nullptr);
}
at::Tensor& log_softmax_backward_out(const at::Tensor& grad, const at::Tensor& output, int64_t dim,
                                     c10::ScalarType input_dtype, at::Tensor& out) {
  backward(true, grad, output, dim, input_dtype, &out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_softmax", softmax);
  m.impl("_softmax.out", softmax_out);
  m.impl("_log_softmax", log_softmax);
  m.impl("_log_softmax.out", log_softmax_out);
  m.impl("_softmax_backward_data", softmax_backward);
  m.impl("_softmax_backward_data.out", softmax_backward_out);
  m.impl("_log_softmax_backward_data", log_softmax_backward);
  m.impl("_log_softmax_backward_data.out", log_softmax_backward_out);
}

}  // namespace torch_tpu::aten
