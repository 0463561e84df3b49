// A loaded PJRT plugin: the shared library, its function table and version.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "pjrt/c_api.h"

namespace torch_tpu::pjrt {

// A plugin attribute value as the plugin reports it.
using AttributeValue =
    std::variant<std::string, int64_t, std::vector<int64_t>, float, bool>;

class Plugin {
 public:
  // Oldest API minor version whose layouts this build relies on.
  static constexpr int kMinApiMinor = 40;

  // dlopens `path`, checks the API version and initializes the plugin.
  // Throws std::runtime_error with a message that says what is wrong with
  // the file (missing, not a shared library, not a PJRT plugin, too old).
  static std::shared_ptr<Plugin> load(const std::string& path);

  ~Plugin();
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;

  const c::Api* api() const { return api_; }
  const std::string& path() const { return path_; }
  int api_major() const { return major_; }
  int api_minor() const { return minor_; }

  // True when the plugin's function table is long enough to hold the slot
  // at `offset` (use TORCH_TPU_PJRT_HAS) and the slot is filled.
  bool has_slot(size_t offset) const;

  // The plugin's attributes: xla_version, stablehlo_current_version, ...
  std::map<std::string, AttributeValue> attributes() const;

 private:
  Plugin(std::string path, void* handle, const c::Api* api);

  std::string path_;
  void* handle_;
  const c::Api* api_;
  int major_;
  int minor_;
};

#define TORCH_TPU_PJRT_HAS(plugin, slot) \
  (plugin).has_slot(offsetof(::torch_tpu::pjrt::c::Api, slot))

std::string attribute_to_string(const AttributeValue& value);

}  // namespace torch_tpu::pjrt
