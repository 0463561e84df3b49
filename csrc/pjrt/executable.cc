#include "pjrt/executable.h"

#include <stdexcept>

#include "pjrt/client.h"
#include "pjrt/element_types.h"
#include "pjrt/error.h"

namespace torch_tpu::pjrt {

LoadedExecutable::LoadedExecutable(std::shared_ptr<const Client> client,
                                   c::LoadedExecutable* executable)
    : client_(std::move(client)), loaded_(executable), executable_(nullptr) {
  const c::Api* a = api();
  auto get_args = c::make_args<c::LoadedExecutableGetExecutableArgs>();
  get_args.loaded_executable = loaded_;
  check(a, a->LoadedExecutable_GetExecutable(&get_args),
        "PJRT_LoadedExecutable_GetExecutable");
  executable_ = get_args.executable;

  auto name_args = c::make_args<c::ExecutableNameArgs>();
  name_args.executable = executable_;
  check(a, a->Executable_Name(&name_args), "PJRT_Executable_Name");
  name_.assign(name_args.name, name_args.name_size);

  // Output types and shapes are read once here so that execute() never
  // has to ask the plugin.
  auto count_args = c::make_args<c::ExecutableCountArgs>();
  count_args.executable = executable_;
  check(a, a->Executable_NumOutputs(&count_args), "PJRT_Executable_NumOutputs");
  outputs_.resize(count_args.count);
  const Plugin& plugin = client_->plugin();
  if (TORCH_TPU_PJRT_HAS(plugin, Executable_OutputElementTypes) &&
      TORCH_TPU_PJRT_HAS(plugin, Executable_OutputDimensions)) {
    auto types_args = c::make_args<c::ExecutableOutputTypesArgs>();
    types_args.executable = executable_;
    check(a, a->Executable_OutputElementTypes(&types_args),
          "PJRT_Executable_OutputElementTypes");
    auto dims_args = c::make_args<c::ExecutableOutputDimensionsArgs>();
    dims_args.executable = executable_;
    check(a, a->Executable_OutputDimensions(&dims_args),
          "PJRT_Executable_OutputDimensions");
    size_t offset = 0;
    for (size_t i = 0; i < outputs_.size() && i < types_args.num_output_types; ++i) {
      auto type = from_pjrt(types_args.output_types[i]);
      outputs_[i].type = type.value_or(ElementType::kPred);
      outputs_[i].dims.assign(dims_args.dims + offset,
                              dims_args.dims + offset + dims_args.dim_sizes[i]);
      offset += dims_args.dim_sizes[i];
    }
  }
}

LoadedExecutable::~LoadedExecutable() {
  const c::Api* a = api();
  if (executable_ != nullptr) {
    auto args = c::make_args<c::ExecutableDestroyArgs>();
    args.executable = executable_;
    if (c::Error* error = a->Executable_Destroy(&args)) {
      (void)consume_error(a, error, "PJRT_Executable_Destroy");
    }
  }
  auto args = c::make_args<c::LoadedExecutableDestroyArgs>();
  args.executable = loaded_;
  if (c::Error* error = a->LoadedExecutable_Destroy(&args)) {
    (void)consume_error(a, error, "PJRT_LoadedExecutable_Destroy");
  }
}

const c::Api* LoadedExecutable::api() const { return client_->api(); }

int64_t LoadedExecutable::generated_code_size() const {
  auto args = c::make_args<c::ExecutableCodeSizeArgs>();
  args.executable = executable_;
  check(api(), api()->Executable_SizeOfGeneratedCodeInBytes(&args),
        "PJRT_Executable_SizeOfGeneratedCodeInBytes");
  return args.size_in_bytes;
}

std::string LoadedExecutable::fingerprint() const {
  if (!TORCH_TPU_PJRT_HAS(client_->plugin(), Executable_Fingerprint)) return {};
  auto args = c::make_args<c::ExecutableFingerprintArgs>();
  args.executable = executable_;
  if (c::Error* error = api()->Executable_Fingerprint(&args)) {
    (void)consume_error(api(), error, "PJRT_Executable_Fingerprint");
    return {};
  }
  return std::string(args.fingerprint, args.fingerprint_size);
}

const std::optional<ExecutionMemory>& LoadedExecutable::execution_memory() const {
  std::call_once(memory_once_, [this] {
    if (!TORCH_TPU_PJRT_HAS(client_->plugin(), Executable_GetCompiledMemoryStats)) return;
    auto args = c::make_args<c::ExecutableMemoryStatsArgs>();
    args.executable = executable_;
    if (c::Error* error = api()->Executable_GetCompiledMemoryStats(&args)) {
      (void)consume_error(api(), error, "PJRT_Executable_GetCompiledMemoryStats");
      return;
    }
    memory_ = ExecutionMemory{args.output_size_in_bytes, args.alias_size_in_bytes};
  });
  return memory_;
}

std::string LoadedExecutable::serialize() const {
  auto args = c::make_args<c::ExecutableSerializeArgs>();
  args.executable = executable_;
  check(api(), api()->Executable_Serialize(&args), "PJRT_Executable_Serialize");
  std::string bytes(args.bytes, args.bytes_size);
  if (args.serialized_deleter != nullptr) {
    args.serialized_deleter(args.serialized);
  }
  return bytes;
}

LoadedExecutable::Result LoadedExecutable::execute(
    const std::vector<c::Buffer*>& arguments, int device,
    const std::vector<int64_t>& non_donatable) const {
  auto options = c::make_args<c::ExecuteOptions>();
  if (!non_donatable.empty()) {
    options.non_donatable_input_indices = non_donatable.data();
    options.num_non_donatable_input_indices = non_donatable.size();
  }
  std::vector<c::Buffer*> outputs(outputs_.size(), nullptr);
  c::Buffer* const* argument_list = arguments.data();
  c::Buffer** output_list = outputs.data();
  c::Event* done = nullptr;

  auto args = c::make_args<c::LoadedExecutableExecuteArgs>();
  args.executable = loaded_;
  args.options = &options;
  args.argument_lists = &argument_list;
  args.num_devices = 1;
  args.num_args = arguments.size();
  args.output_lists = &output_list;
  args.device_complete_events = &done;
  args.execute_device = client_->device(device).handle;
  check(api(), api()->LoadedExecutable_Execute(&args),
        "PJRT_LoadedExecutable_Execute");

  Result result;
  result.outputs.reserve(outputs.size());
  for (c::Buffer* out : outputs) result.outputs.emplace_back(client_, out);
  result.done = Event(api(), done);
  return result;
}

}  // namespace torch_tpu::pjrt
