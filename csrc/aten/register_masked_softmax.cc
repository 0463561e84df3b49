// ATen glue for _masked_softmax and its backward: the softmax that
// nn.MultiheadAttention's and the Transformer layers' fast paths call
// with a padding or attention mask. The mask is expanded here to the
// input's shape, as CPU does, so the lowering sees one elementwise mask.
#include <ATen/WrapDimUtils.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

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
  m.impl("_masked_softmax", masked_softmax);
  m.impl("_masked_softmax_backward", masked_softmax_backward);
}

}  // namespace torch_tpu::aten
