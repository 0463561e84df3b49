// A PJRT client: the devices of one plugin, transfers and compilation.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/element_type.h"
#include "pjrt/buffer.h"
#include "pjrt/compile_options.h"
#include "pjrt/plugin.h"

namespace torch_tpu::pjrt {

class LoadedExecutable;

struct DeviceInfo {
  c::Device* handle;
  int id;                 // global id
  int local_hardware_id;  // -1 when the plugin does not say
  std::string kind;       // "cpu", "NVIDIA H200", "TPU v5 lite", ...
  std::string description;
};

struct MemoryStats {
  int64_t bytes_in_use = 0;
  std::optional<int64_t> peak_bytes_in_use;
  std::optional<int64_t> bytes_limit;
  std::optional<int64_t> num_allocs;
};

// A client option passed to PJRT_Client_Create.
struct ClientOption {
  std::string name;
  std::variant<std::string, int64_t, bool, float> value;
};

class Client : public std::enable_shared_from_this<Client> {
 public:
  static std::shared_ptr<Client> create(
      std::shared_ptr<Plugin> plugin,
      const std::vector<ClientOption>& options = {});
  ~Client();
  Client(const Client&) = delete;
  Client& operator=(const Client&) = delete;

  const c::Api* api() const { return plugin_->api(); }
  const Plugin& plugin() const { return *plugin_; }
  c::Client* get() const { return client_; }

  const std::string& platform_name() const { return platform_name_; }
  const std::string& platform_version() const { return platform_version_; }
  int process_index() const { return process_index_; }

  // Devices this process can address, in the plugin's order.
  const std::vector<DeviceInfo>& devices() const { return devices_; }
  const DeviceInfo& device(int index) const;

  // Copies a host array to `device`. `byte_strides` empty: dense row-major.
  // The host data is copied or pinned before this returns only when
  // `wait_for_host_copy` is set; otherwise `host_done` (if non-null)
  // receives the event after which `data` may be freed.
  Buffer buffer_from_host(const void* data, ElementType type,
                          const std::vector<int64_t>& dims,
                          const std::vector<int64_t>& byte_strides,
                          int device, Event* host_done = nullptr) const;

  // Copies `buffer` to another device of this client.
  Buffer copy_to_device(const Buffer& buffer, int device) const;

  // Compiles a StableHLO module (MLIR text or bytecode).
  std::shared_ptr<LoadedExecutable> compile(std::string_view mlir,
                                            const CompileOptions& options) const;

  // Loads an executable produced by LoadedExecutable::serialize().
  std::shared_ptr<LoadedExecutable> deserialize(std::string_view bytes) const;

  // nullopt when the plugin does not report memory statistics.
  std::optional<MemoryStats> memory_stats(int device) const;

 private:
  Client(std::shared_ptr<Plugin> plugin, c::Client* client);

  std::shared_ptr<Plugin> plugin_;
  c::Client* client_;
  std::string platform_name_;
  std::string platform_version_;
  int process_index_ = 0;
  std::vector<DeviceInfo> devices_;
};

}  // namespace torch_tpu::pjrt
