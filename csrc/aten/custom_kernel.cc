#include "aten/custom_kernel.h"

#include <c10/util/Exception.h>

#include <mutex>

#include "aten/dtypes.h"
#include "aten/op_runner.h"
#include "cache/fingerprint.h"

namespace torch_tpu::aten {

namespace {

hlo::TensorType type_of(const at::Tensor& t, const char* op) {
  return hlo::TensorType(to_element_type(t.scalar_type(), op), t.sizes().vec());
}

}  // namespace

std::shared_ptr<const CustomKernel> import_custom_kernel(std::string op_name, std::string_view module_text) {
  // 64 bits of the text's fingerprint name its functions: enough to keep
  // the kernels of one program apart; the cache key holds the same symbol.
  const std::string prefix = "kernel_" + cache::fingerprint(module_text).to_hex().substr(0, 16) + "_";
  auto kernel = std::make_shared<CustomKernel>();
  kernel->function = hlo::import_module(module_text, prefix);
  kernel->op_name = std::move(op_name);
  // Kept for the life of the process, like an op's registration: pending
  // graphs, cache keys and profiles refer to the kernel's name and text.
  static std::mutex mutex;
  static std::vector<std::shared_ptr<const CustomKernel>> kernels;
  std::lock_guard<std::mutex> lock(mutex);
  kernels.push_back(kernel);
  return kernel;
}

std::vector<at::Tensor> run_custom_kernel(const CustomKernel& kernel, const std::vector<at::Tensor>& inputs) {
  const char* op = kernel.op_name.c_str();
  const auto& params = kernel.function.parameter_types;
  TORCH_CHECK(inputs.size() == params.size(), op, ": the kernel takes ", params.size(), " tensors, got ",
              inputs.size());
  OpCall call{op, kernel.function.symbol, {}, {}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    const at::Tensor& t = inputs[i];
    TORCH_CHECK(t.defined(), op, ": input ", i, " is undefined");
    TORCH_CHECK(t.device().type() == c10::DeviceType::PrivateUse1, op, ": input ", i,
                " must be a tpu tensor, got one on ", t.device());
    TORCH_CHECK_TYPE(type_of(t, op) == params[i], op, ": input ", i, " must be ", params[i].to_string(),
                     " (the type the kernel was built for), got ", type_of(t, op).to_string());
    call.tensors.push_back(TensorArg::borrowed(t));
  }
  TORCH_CHECK(!inputs.empty(), op, ": a kernel needs at least one tpu tensor input to choose its device");
  const hlo::ImportedFunction* function = &kernel.function;
  return run_op(call, [function](hlo::Builder& b, const std::vector<hlo::Value>& tensors,
                                 const std::vector<hlo::Value>&) { return b.call_function(*function, tensors); });
}

}  // namespace torch_tpu::aten
