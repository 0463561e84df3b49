#include "aten/fallback.h"

#include <ATen/native/CPUFallback.h>
#include <c10/util/Exception.h>
#include <torch/library.h>

#include <atomic>
#include <mutex>
#include <optional>
#include <string>

#include "runtime/config.h"

namespace torch_tpu::aten {

namespace {

std::atomic<int> g_enabled{-1};  // -1: not read from the environment yet
std::mutex g_mutex;
std::map<std::string, int64_t> g_counts;

// A CPU tensor (not a 0-dim scalar) among tpu ones: the call is a mistake
// whichever op it reaches. It gets here when PyTorch picked a CPU kernel by
// the input's device and the weight's tpu key sent that kernel here
// (Conv2d on tpu given a CPU input reaches _slow_conv2d_forward).
void check_one_device(const c10::OperatorHandle& op, const torch::jit::Stack& stack, const std::string& name) {
  std::optional<c10::Device> tpu, cpu;
  auto note = [&](const at::Tensor& t) {
    if (!t.defined()) return;
    if (t.device().type() == c10::DeviceType::PrivateUse1) tpu = t.device();
    if (t.device().is_cpu() && t.dim() > 0) cpu = t.device();
  };
  for (const c10::IValue& v : torch::jit::last(stack, op.schema().arguments().size())) {
    if (v.isTensor()) {
      note(v.toTensor());
    } else if (v.isTensorList()) {
      for (const at::Tensor& t : v.toTensorVector()) note(t);
    } else if (v.isList()) {
      for (const c10::IValue& e : v.toListRef()) {
        if (e.isTensor()) note(e.toTensor());
      }
    }
  }
  TORCH_CHECK(!(tpu && cpu), "Expected all tensors to be on the same device, but found at least two devices, ",
              *tpu, " and ", *cpu, "! (when checking arguments for ", name, ")");
}

// The quantized dtype a call asks for (a quantized tensor argument or a
// quantized `dtype`), if any.
std::optional<c10::ScalarType> quantized_dtype(const c10::OperatorHandle& op, const torch::jit::Stack& stack) {
  const auto& args = op.schema().arguments();
  auto values = torch::jit::last(stack, args.size());
  for (size_t i = 0; i < args.size(); ++i) {
    const c10::IValue& v = values[i];
    if (v.isTensor() && v.toTensor().defined() && v.toTensor().is_quantized()) return v.toTensor().scalar_type();
    if (args[i].name() == "dtype" && v.isInt() && c10::isQIntType(static_cast<c10::ScalarType>(v.toInt()))) {
      return static_cast<c10::ScalarType>(v.toInt());
    }
  }
  return std::nullopt;
}

// Quantized tensors have no tpu form. The CPU fallback's hint cannot help
// (it would make a CPU quantized tensor the caller wants on tpu), so these
// calls get their own message.
void refuse_quantized(const std::string& name, std::optional<c10::ScalarType> dtype) {
  TORCH_CHECK_NOT_IMPLEMENTED(false, name, ": ", dtype ? "dtype " + std::string(c10::toString(*dtype)) : "a quantized tensor",
                              " is not supported on tpu (quantized tensors have no tpu form; the fake quantization "
                              "of quantization-aware training runs on float tensors, and a trained model converts "
                              "on the CPU)");
}

void quantized_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  refuse_quantized(op_name(op), quantized_dtype(op, *stack));
}

void tpu_fallback(const c10::OperatorHandle& op, torch::jit::Stack* stack) {
  const std::string name = op_name(op);
  if (auto dtype = quantized_dtype(op, *stack)) refuse_quantized(name, dtype);
  check_one_device(op, *stack, name);
  // An operator of another library (a user's custom op, torchvision's)
  // needs a tpu kernel from its owner, not a torch_tpu lowering.
  const std::string& qualified = op.schema().operator_name().name;
  const std::string ns = qualified.substr(0, qualified.find("::"));
  const std::string own_kernel =
      ns == "aten" ? ""
                   : " (an operator of the '" + ns + "' library has a tpu kernel when one is registered for it: "
                     "torch.library.register_kernel(\"" + qualified + "\", \"tpu\", fn), or a StableHLO / JAX "
                     "kernel through torch_tpu.kernels)";
  // Some ops exist only for CUDA (or other devices): the CPU fallback
  // cannot run them either, so it is not offered.
  const bool cpu_can_run = op.hasComputedKernelForDispatchKey(c10::DispatchKey::CPU);
  TORCH_CHECK_NOT_IMPLEMENTED(cpu_can_run, name, " is not supported on tpu yet", own_kernel,
                              ", and it has no CPU kernel for it, so the CPU fallback cannot run it either");
  TORCH_CHECK_NOT_IMPLEMENTED(cpu_fallback_enabled(), name, " is not supported on tpu yet", own_kernel,
                              " (set TORCH_TPU_CPU_FALLBACK=1 or call torch_tpu.set_cpu_fallback(True) to run it "
                              "on the CPU)");
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    first = g_counts[name]++ == 0;
  }
  if (first) {
    TORCH_WARN(name, " has no tpu lowering: running it on the CPU (inputs and outputs are copied)");
  }
  at::native::cpu_fallback(op, stack);
}

}  // namespace

std::string op_name(const c10::OperatorHandle& op) {
  return op.schema().operator_name().name +
         (op.schema().overload_name().empty() ? "" : "." + op.schema().overload_name());
}

void set_cpu_fallback_enabled(bool enabled) { g_enabled.store(enabled ? 1 : 0); }

bool cpu_fallback_enabled() {
  int v = g_enabled.load();
  if (v < 0) {
    v = config::get_bool(config::kCpuFallback) ? 1 : 0;
    g_enabled.store(v);
  }
  return v == 1;
}

std::map<std::string, int64_t> cpu_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  return g_counts;
}

void reset_cpu_fallback_counts() {
  std::lock_guard<std::mutex> lock(g_mutex);
  g_counts.clear();
}

TORCH_LIBRARY_IMPL(_, PrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&tpu_fallback>());
}

TORCH_LIBRARY_IMPL(_, QuantizedPrivateUse1, m) {
  m.fallback(torch::CppFunction::makeFromBoxedFunction<&quantized_fallback>());
}

}  // namespace torch_tpu::aten
