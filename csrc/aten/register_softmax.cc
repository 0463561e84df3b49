// ATen glue for _softmax / _log_softmax and their backward ops (what
// torch.softmax, F.log_softmax, cross_entropy and autograd call), and for
// _masked_softmax: the softmax that nn.MultiheadAttention's and the
// Transformer layers' fast paths call with a padding or attention mask,
// expanded here to the input's shape as CPU does, so the lowering sees one
// elementwise mask. The lowerings live in csrc/ops/reduction/softmax.cc.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/empty_like.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <algorithm>
#include <optional>
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
  if (self.numel() == 0 && !c10::isFloatingType(self.scalar_type()) && !half_to_float && !out) {
    // CPU's and CUDA's kernels return before they check the dtype.
    (void)at::maybe_wrap_dim(dim, self.dim());
    return at::empty_like(self);
  }
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

// ---- masked softmax -------------------------------------------------------------

// Mask types: 0 an (L, L) attention mask and 1 a (B, L) padding mask, both
// for a (B, H, L, L) input; 2 (and any mask of another rank) a mask of the
// input's own shape.
at::Tensor expanded_mask(const at::Tensor& input, const at::Tensor& mask, std::optional<int64_t> mask_type) {
  TORCH_CHECK(mask.scalar_type() == c10::kBool, "_masked_softmax: Mask should be a boolean tensor");
  int64_t type = 2;
  if (mask.dim() == 2 && input.dim() == 4) {
    TORCH_CHECK(mask_type.has_value(), "_masked_softmax: Mask Type should be defined");
    type = *mask_type;
  }
  TORCH_CHECK(type == 0 || type == 1 || type == 2,
              "_masked_softmax: Mask Type should be 0 (src_mask) or 1 (src_key_padding_mask), or 2 (default_mask)");
  if (type == 2) {
    TORCH_CHECK(input.sizes() == mask.sizes(), "_masked_softmax: for mask_type == 2 mask shape should match input ",
                "shape, got mask ", mask.sizes(), " for input ", input.sizes());
    return mask;
  }
  const int64_t batch = input.size(0), length = input.size(2);
  if (type == 1) {
    TORCH_CHECK(mask.size(0) == batch && mask.size(1) == length,
                "_masked_softmax: for mask_type == 1 mask shape should be (B, L) = (", batch, ", ", length,
                "), got ", mask.sizes());
    return mask.view({batch, 1, 1, length}).expand(input.sizes());
  }
  TORCH_CHECK(mask.size(0) == length && mask.size(1) == length,
              "_masked_softmax: for mask_type == 0 mask shape should be (L, L) = (", length, ", ", length, "), got ",
              mask.sizes());
  return mask.view({1, 1, length, length}).expand(input.sizes());
}

at::Tensor masked_softmax(const at::Tensor& self, const at::Tensor& mask, std::optional<int64_t> dim,
                          std::optional<int64_t> mask_type) {
  TORCH_CHECK(self.device() == mask.device(), "_masked_softmax: expected the input and the mask on one device, got ",
              self.device(), " and ", mask.device());
  at::Tensor full_mask = expanded_mask(self, mask, mask_type);
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(self.scalar_type()), "\"masked_softmax\" not implemented for '",
                              self.scalar_type(), "'");
  const int64_t wrapped = dim.has_value() ? at::maybe_wrap_dim(*dim, self.dim()) : std::max<int64_t>(self.dim() - 1, 0);
  const int64_t d = self.dim() == 0 ? 0 : wrapped;
  const ElementType result = to_element_type(self.scalar_type(), "aten::_masked_softmax");
  OpCall call{"aten::_masked_softmax", key_of(d, result), {self, full_mask}, {}};
  return run_op(call, [d, result](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{ops::lower_masked_softmax(b, t[0], t[1], d, result)};
         }).at(0);
}

at::Tensor masked_softmax_backward(const at::Tensor& grad, const at::Tensor& output, const at::Tensor& mask,
                                   std::optional<int64_t> dim) {
  const char* name = "aten::_masked_softmax_backward";
  TORCH_CHECK(grad.sizes() == mask.sizes(), name, ": mask shape ", mask.sizes(), " should match grad shape ",
              grad.sizes());
  TORCH_CHECK(grad.sizes() == output.sizes(), name, ": grad_output of shape ", grad.sizes(),
              " does not match output of shape ", output.sizes());
  TORCH_CHECK(mask.scalar_type() == c10::kBool, name, ": Mask should be a boolean tensor");
  TORCH_CHECK(grad.scalar_type() == output.scalar_type(), name, ": expected grad_output and output of one dtype, got ",
              grad.scalar_type(), " and ", output.scalar_type());
  TORCH_CHECK_NOT_IMPLEMENTED(c10::isFloatingType(grad.scalar_type()), "\"masked_softmax_backward\" not implemented for '",
                              grad.scalar_type(), "'");
  const int64_t wrapped = dim.has_value() ? at::maybe_wrap_dim(*dim, grad.dim()) : std::max<int64_t>(grad.dim() - 1, 0);
  const int64_t d = grad.dim() == 0 ? 0 : wrapped;
  const ElementType result = to_element_type(grad.scalar_type(), name);
  OpCall call{name, key_of(d, result), {grad, output, mask}, {}};
  return run_op(call, [d, result](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
           return std::vector<hlo::Value>{ops::lower_masked_softmax_backward(b, t[0], t[1], t[2], d, result)};
         }).at(0);
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
  m.impl("_masked_softmax", masked_softmax);
  m.impl("_masked_softmax_backward", masked_softmax_backward);
}

}  // namespace torch_tpu::aten
