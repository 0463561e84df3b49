// Ops whose only kernel is composite code that reads tensor memory on the
// host (fbgemm's packing and quantized linear helpers, mkldnn's
// convolution): given tpu tensors they would dereference a device buffer's
// placeholder address and kill the process. A PrivateUse1 kernel takes
// precedence over a composite one, so registering a refusal here turns the
// crash into an error naming the op.
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include "aten/fallback.h"

namespace torch_tpu::aten {
namespace {

void refuse_host_only(const c10::OperatorHandle& op, c10::DispatchKeySet, torch::jit::Stack*) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, op_name(op), " is not supported on tpu: its kernel reads tensor memory on the host (CPU-only "
                              "fbgemm / mkldnn code); run it on CPU tensors");
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  for (const char* op :
       {"fbgemm_linear_fp16_weight", "fbgemm_linear_fp16_weight.out", "fbgemm_linear_fp16_weight_fp32_activation",
        "fbgemm_linear_fp16_weight_fp32_activation.out", "fbgemm_linear_int8_weight",
        "fbgemm_linear_int8_weight_fp32_activation", "fbgemm_linear_quantize_weight", "fbgemm_pack_gemm_matrix_fp16",
        "fbgemm_pack_quantized_matrix", "fbgemm_pack_quantized_matrix.KN", "_saturate_weight_to_fp16",
        "_wrapped_linear_prepack", "_wrapped_quantized_linear_prepacked", "mkldnn_convolution"}) {
    m.impl(op, torch::CppFunction::makeFromBoxedFunction<&refuse_host_only>());
  }
}

}  // namespace torch_tpu::aten
