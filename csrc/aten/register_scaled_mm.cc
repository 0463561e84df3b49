// ATen glue for torch._scaled_mm, the 8-bit float matmul that float8
// training (torchao's Float8Linear) and fp8 inference checkpoints call.
// Checks follow PyTorch's shape function and CUDA's messages; the lowering
// is ops::lower_scaled_mm. Per-tensor and per-row scaling are supported;
// the blockwise (MX) scale layouts are not.
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "ops/linalg/matmul.h"

namespace torch_tpu::aten {

namespace {

constexpr const char* kOp = "aten::_scaled_mm";

bool is_float8_dtype(c10::ScalarType t) {
  return has_element_type(t) && is_float8(to_element_type(t, kOp));
}

void check_scales(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                  const at::Tensor& scale_b) {
  for (const at::Tensor* s : {&scale_a, &scale_b}) {
    TORCH_CHECK_VALUE(s->scalar_type() == c10::ScalarType::Float, kOp,
                      ": scales must be float32 tensors, got ", s->scalar_type());
  }
  if (scale_a.numel() == 1 && scale_b.numel() == 1) return;  // per tensor
  const int64_t m = self.size(0), n = mat2.size(1);
  const bool rowwise = scale_a.dim() == 2 && scale_b.dim() == 2 && scale_a.size(0) == m && scale_a.size(1) == 1 &&
                       scale_b.size(0) == 1 && scale_b.size(1) == n;
  TORCH_CHECK_VALUE(rowwise, kOp, ": invalid scaling configuration: scale_a ", scale_a.sizes(), " and scale_b ",
                    scale_b.sizes(), " for a [", m, ", ", self.size(1), "] x [", mat2.size(0), ", ", n,
                    "] product. tpu supports one-element scales (per tensor) or scale_a [", m, ", 1] with scale_b [1, ",
                    n, "] (per row); blockwise scaling is not supported");
}

std::vector<int64_t> check_scaled_mm(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                                     const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                                     c10::ScalarType out_dtype) {
  TORCH_CHECK(self.dim() == 2, "mat1 must be a matrix");
  TORCH_CHECK(mat2.dim() == 2, "mat2 must be a matrix");
  TORCH_CHECK(self.size(1) == mat2.size(0), "mat1 and mat2 shapes cannot be multiplied (", self.size(0), "x",
              self.size(1), " and ", mat2.size(0), "x", mat2.size(1), ")");
  TORCH_CHECK(is_float8_dtype(self.scalar_type()) && is_float8_dtype(mat2.scalar_type()), kOp,
              ": expected both inputs to be float8 types but got self.dtype=", self.scalar_type(),
              " and mat2.dtype=", mat2.scalar_type());
  TORCH_CHECK(c10::isFloatingType(out_dtype) && has_element_type(out_dtype) && out_dtype != c10::ScalarType::Double,
              kOp, ": out_dtype must be a float8 type, float16, bfloat16 or float32, got ", out_dtype);
  check_scales(self, mat2, scale_a, scale_b);
  if (bias && bias->defined()) {
    TORCH_CHECK(bias->numel() == mat2.size(1), "Bias must be size ", mat2.size(1), " but got ", bias->numel());
    TORCH_CHECK(bias->scalar_type() == c10::ScalarType::Float || bias->scalar_type() == c10::ScalarType::BFloat16 ||
                    bias->scalar_type() == c10::ScalarType::Half,
                kOp, ": bias must be float32, bfloat16 or float16, got ", bias->scalar_type());
  }
  return {self.size(0), mat2.size(1)};
}

struct ScaledMmCall {
  OpCall call;
  LoweringBody body;
};

ScaledMmCall scaled_mm_call(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                            const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                            const std::optional<at::Tensor>& scale_result, c10::ScalarType out_dtype) {
  const bool has_bias = bias && bias->defined();
  const ElementType out = to_element_type(out_dtype, kOp);
  // A result scale matters for 8-bit float results only (see the lowering).
  const bool has_result_scale = scale_result && scale_result->defined() && is_float8(out);
  ScaledMmCall c{OpCall{kOp, "", {self, mat2, scale_a, scale_b}, {}}, {}};
  c.call.attributes += std::string(short_name(out));
  if (has_bias) {
    c.call.attributes += ",bias";
    c.call.tensors.push_back(*bias);
  }
  if (has_result_scale) {
    c.call.attributes += ",scale_result";
    c.call.tensors.push_back(*scale_result);
  }
  c.body = [has_bias, has_result_scale, out](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                              const std::vector<hlo::Value>&) {
    size_t next = 4;
    std::optional<hlo::Value> bias_value, result_scale;
    if (has_bias) bias_value = t[next++];
    if (has_result_scale) result_scale = t[next++];
    return std::vector<hlo::Value>{
        ops::lower_scaled_mm(b, t[0], t[1], t[2], t[3], bias_value, result_scale, out)};
  };
  return c;
}

at::Tensor scaled_mm(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                     const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                     const std::optional<at::Tensor>& scale_result, std::optional<c10::ScalarType> out_dtype,
                     bool use_fast_accum) {
  const c10::ScalarType out = out_dtype.value_or(self.scalar_type());
  check_scaled_mm(self, mat2, scale_a, scale_b, bias, out);
  const ScaledMmCall c = scaled_mm_call(self, mat2, scale_a, scale_b, bias, scale_result, out);
  return run_op(c.call, c.body).at(0);
}

at::Tensor& scaled_mm_out(const at::Tensor& self, const at::Tensor& mat2, const at::Tensor& scale_a,
                          const at::Tensor& scale_b, const std::optional<at::Tensor>& bias,
                          const std::optional<at::Tensor>& scale_result, std::optional<c10::ScalarType> out_dtype,
                          bool use_fast_accum, at::Tensor& out) {
  const c10::ScalarType dtype = out_dtype.value_or(self.scalar_type());
  const auto shape = check_scaled_mm(self, mat2, scale_a, scale_b, bias, dtype);
  TORCH_CHECK(out.scalar_type() == dtype, "Expected out tensor to have dtype ", dtype, ", but got ",
              out.scalar_type(), " instead");
  at::native::resize_output(out, shape);
  const ScaledMmCall c = scaled_mm_call(self, mat2, scale_a, scale_b, bias, scale_result, dtype);
  run_op_into(c.call, c.body, out);
  return out;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("_scaled_mm", scaled_mm);
  m.impl("_scaled_mm.out", scaled_mm_out);
}

}  // namespace torch_tpu::aten
