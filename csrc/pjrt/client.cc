#include "pjrt/client.h"

#include <stdexcept>
#include <string>

#include "pjrt/element_types.h"
#include "pjrt/error.h"
#include "pjrt/executable.h"

namespace torch_tpu::pjrt {

namespace {

std::string description_string(const c::Api* api, c::DeviceDescription* desc,
                               c::Fn<c::DeviceDescriptionStringArgs> fn,
                               const char* call) {
  auto args = c::make_args<c::DeviceDescriptionStringArgs>();
  args.description = desc;
  check(api, fn(&args), call);
  return std::string(args.value, args.value_size);
}

}  // namespace

std::shared_ptr<Client> Client::create(std::shared_ptr<Plugin> plugin,
                                       const std::vector<ClientOption>& options) {
  std::vector<c::NamedValue> values(options.size());
  for (size_t i = 0; i < options.size(); ++i) {
    c::NamedValue& nv = values[i];
    std::memset(&nv, 0, sizeof nv);
    nv.struct_size = sizeof nv;
    nv.name = options[i].name.c_str();
    nv.name_size = options[i].name.size();
    nv.value_size = 1;
    const auto& v = options[i].value;
    if (auto* s = std::get_if<std::string>(&v)) {
      nv.type = c::NamedValueType::kString;
      nv.string_value = s->c_str();
      nv.value_size = s->size();
    } else if (auto* n = std::get_if<int64_t>(&v)) {
      nv.type = c::NamedValueType::kInt64;
      nv.int64_value = *n;
    } else if (auto* b = std::get_if<bool>(&v)) {
      nv.type = c::NamedValueType::kBool;
      nv.bool_value = *b;
    } else {
      nv.type = c::NamedValueType::kFloat;
      nv.float_value = std::get<float>(v);
    }
  }
  const c::Api* api = plugin->api();
  auto args = c::make_args<c::ClientCreateArgs>();
  args.create_options = values.data();
  args.num_options = values.size();
  check(api, api->Client_Create(&args), "PJRT_Client_Create");
  return std::shared_ptr<Client>(new Client(std::move(plugin), args.client));
}

Client::Client(std::shared_ptr<Plugin> plugin, c::Client* client)
    : plugin_(std::move(plugin)), client_(client) {
  const c::Api* a = api();
  auto name_args = c::make_args<c::ClientStringArgs>();
  name_args.client = client_;
  check(a, a->Client_PlatformName(&name_args), "PJRT_Client_PlatformName");
  platform_name_.assign(name_args.value, name_args.value_size);

  auto version_args = c::make_args<c::ClientStringArgs>();
  version_args.client = client_;
  check(a, a->Client_PlatformVersion(&version_args),
        "PJRT_Client_PlatformVersion");
  platform_version_.assign(version_args.value, version_args.value_size);

  auto process_args = c::make_args<c::ClientProcessIndexArgs>();
  process_args.client = client_;
  check(a, a->Client_ProcessIndex(&process_args), "PJRT_Client_ProcessIndex");
  process_index_ = process_args.process_index;

  auto devices_args = c::make_args<c::ClientDevicesArgs>();
  devices_args.client = client_;
  check(a, a->Client_AddressableDevices(&devices_args),
        "PJRT_Client_AddressableDevices");
  for (size_t i = 0; i < devices_args.num_devices; ++i) {
    DeviceInfo info{devices_args.devices[i], 0, -1, "", ""};
    auto desc_args = c::make_args<c::DeviceGetDescriptionArgs>();
    desc_args.device = info.handle;
    check(a, a->Device_GetDescription(&desc_args), "PJRT_Device_GetDescription");
    auto id_args = c::make_args<c::DeviceDescriptionIdArgs>();
    id_args.description = desc_args.description;
    check(a, a->DeviceDescription_Id(&id_args), "PJRT_DeviceDescription_Id");
    info.id = id_args.id;
    info.kind = description_string(a, desc_args.description,
                                   a->DeviceDescription_Kind,
                                   "PJRT_DeviceDescription_Kind");
    info.description = description_string(a, desc_args.description,
                                          a->DeviceDescription_ToString,
                                          "PJRT_DeviceDescription_ToString");
    auto hw_args = c::make_args<c::DeviceLocalHardwareIdArgs>();
    hw_args.device = info.handle;
    if (c::Error* error = a->Device_LocalHardwareId(&hw_args)) {
      (void)consume_error(a, error, "PJRT_Device_LocalHardwareId");
    } else {
      info.local_hardware_id = hw_args.local_hardware_id;
    }
    devices_.push_back(std::move(info));
  }
}

Client::~Client() {
  auto args = c::make_args<c::ClientDestroyArgs>();
  args.client = client_;
  if (c::Error* error = api()->Client_Destroy(&args)) {
    (void)consume_error(api(), error, "PJRT_Client_Destroy");
  }
}

const DeviceInfo& Client::device(int index) const {
  if (index < 0 || index >= static_cast<int>(devices_.size())) {
    throw std::out_of_range("device index " + std::to_string(index) +
                            " is out of range: the " + platform_name_ +
                            " client has " + std::to_string(devices_.size()) +
                            " device(s)");
  }
  return devices_[index];
}

Buffer Client::buffer_from_host(const void* data, ElementType type,
                                const std::vector<int64_t>& dims,
                                const std::vector<int64_t>& byte_strides,
                                int device, Event* host_done) const {
  for (int64_t d : dims) {
    if (d < 0) throw std::invalid_argument("negative dimension in host buffer");
  }
  auto args = c::make_args<c::ClientBufferFromHostArgs>();
  args.client = client_;
  args.data = data;
  args.type = to_pjrt(type);
  args.dims = dims.data();
  args.num_dims = dims.size();
  if (!byte_strides.empty()) {
    args.byte_strides = byte_strides.data();
    args.num_byte_strides = byte_strides.size();
  }
  args.host_buffer_semantics =
      host_done ? c::HostBufferSemantics::kImmutableUntilTransferCompletes
                : c::HostBufferSemantics::kImmutableOnlyDuringCall;
  args.device = this->device(device).handle;
  check(api(), api()->Client_BufferFromHostBuffer(&args),
        "PJRT_Client_BufferFromHostBuffer");
  Event done(api(), args.done_with_host_buffer);
  if (host_done) {
    *host_done = std::move(done);
  }
  return Buffer(shared_from_this(), args.buffer);
}

Buffer Client::copy_to_device(const Buffer& buffer, int device) const {
  auto args = c::make_args<c::BufferCopyToDeviceArgs>();
  args.buffer = buffer.get();
  args.dst_device = this->device(device).handle;
  check(api(), api()->Buffer_CopyToDevice(&args), "PJRT_Buffer_CopyToDevice");
  return Buffer(shared_from_this(), args.dst_buffer);
}

std::shared_ptr<LoadedExecutable> Client::compile(
    std::string_view mlir, const CompileOptions& options) const {
  std::string code(mlir);
  static constexpr std::string_view kFormat = "mlir";
  auto program = c::make_args<c::Program>();
  program.code = code.data();
  program.code_size = code.size();
  program.format = kFormat.data();
  program.format_size = kFormat.size();

  const std::string serialized_options = options.serialize();
  auto args = c::make_args<c::ClientCompileArgs>();
  args.client = client_;
  args.program = &program;
  args.compile_options = serialized_options.data();
  args.compile_options_size = serialized_options.size();
  check(api(), api()->Client_Compile(&args), "PJRT_Client_Compile");
  return std::make_shared<LoadedExecutable>(shared_from_this(), args.executable);
}

std::shared_ptr<LoadedExecutable> Client::deserialize(std::string_view bytes) const {
  auto args = c::make_args<c::ExecutableDeserializeAndLoadArgs>();
  args.client = client_;
  args.serialized = bytes.data();
  args.serialized_size = bytes.size();
  check(api(), api()->Executable_DeserializeAndLoad(&args),
        "PJRT_Executable_DeserializeAndLoad");
  return std::make_shared<LoadedExecutable>(shared_from_this(),
                                            args.loaded_executable);
}

std::optional<MemoryStats> Client::memory_stats(int device) const {
  if (!TORCH_TPU_PJRT_HAS(*plugin_, Device_MemoryStats)) return std::nullopt;
  auto args = c::make_args<c::DeviceMemoryStatsArgs>();
  args.device = this->device(device).handle;
  if (c::Error* error = api()->Device_MemoryStats(&args)) {
    // The CPU plugin answers UNIMPLEMENTED: no statistics, not a failure.
    (void)consume_error(api(), error, "PJRT_Device_MemoryStats");
    return std::nullopt;
  }
  MemoryStats stats;
  stats.bytes_in_use = args.bytes_in_use;
  if (args.peak_bytes_in_use_is_set) stats.peak_bytes_in_use = args.peak_bytes_in_use;
  if (args.bytes_limit_is_set) stats.bytes_limit = args.bytes_limit;
  if (args.num_allocs_is_set) stats.num_allocs = args.num_allocs;
  return stats;
}

}  // namespace torch_tpu::pjrt
