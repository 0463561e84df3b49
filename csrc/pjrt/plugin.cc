#include "pjrt/plugin.h"

#include <dlfcn.h>
#include <sys/stat.h>

#include <stdexcept>

#include "pjrt/error.h"

namespace torch_tpu::pjrt {

namespace {

std::runtime_error load_error(const std::string& path, const std::string& why) {
  return std::runtime_error("cannot load the PJRT plugin '" + path +
                            "': " + why);
}

}  // namespace

std::shared_ptr<Plugin> Plugin::load(const std::string& path) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    throw load_error(path, "no such file");
  }
  if (!S_ISREG(st.st_mode)) {
    throw load_error(path, "not a regular file");
  }
  // RTLD_LOCAL: plugins bundle their own copies of LLVM, protobuf and absl;
  // they must not be interposed with each other or with torch's.
  void* handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    const char* why = ::dlerror();
    throw load_error(path, why ? why : "dlopen failed");
  }
  auto get_api =
      reinterpret_cast<c::GetPjrtApiFn>(::dlsym(handle, "GetPjrtApi"));
  if (get_api == nullptr) {
    ::dlclose(handle);
    throw load_error(path,
                     "the library does not export GetPjrtApi, so it is not a "
                     "PJRT plugin");
  }
  const c::Api* api = get_api();
  if (api == nullptr || api->struct_size < offsetof(c::Api, Plugin_Attributes)) {
    ::dlclose(handle);
    throw load_error(path, "GetPjrtApi returned no usable function table");
  }
  return std::shared_ptr<Plugin>(new Plugin(path, handle, api));
}

Plugin::Plugin(std::string path, void* handle, const c::Api* api)
    : path_(std::move(path)),
      handle_(handle),
      api_(api),
      major_(api->pjrt_api_version.major_version),
      minor_(api->pjrt_api_version.minor_version) {
  if (major_ != 0 || minor_ < kMinApiMinor) {
    std::string version =
        std::to_string(major_) + "." + std::to_string(minor_);
    throw load_error(path_, "PJRT API version " + version +
                                " is not supported (this build needs 0." +
                                std::to_string(kMinApiMinor) +
                                " or newer within major version 0)");
  }
  if (has_slot(offsetof(c::Api, Plugin_Initialize))) {
    auto args = c::make_args<c::PluginInitializeArgs>();
    check(api_, api_->Plugin_Initialize(&args), "PJRT_Plugin_Initialize");
  }
}

// The library is deliberately never dlclose'd: plugins register static
// state (LLVM, thread pools) that does not survive unloading.
Plugin::~Plugin() = default;

bool Plugin::has_slot(size_t offset) const {
  if (offset + sizeof(void*) > api_->struct_size) return false;
  void* slot = nullptr;
  std::memcpy(&slot, reinterpret_cast<const char*>(api_) + offset,
              sizeof(void*));
  return slot != nullptr;
}

std::map<std::string, AttributeValue> Plugin::attributes() const {
  std::map<std::string, AttributeValue> result;
  if (!has_slot(offsetof(c::Api, Plugin_Attributes))) return result;
  auto args = c::make_args<c::PluginAttributesArgs>();
  check(api_, api_->Plugin_Attributes(&args), "PJRT_Plugin_Attributes");
  for (size_t i = 0; i < args.num_attributes; ++i) {
    const c::NamedValue& nv = args.attributes[i];
    std::string name(nv.name, nv.name_size);
    switch (nv.type) {
      case c::NamedValueType::kString:
        result[name] = std::string(nv.string_value, nv.value_size);
        break;
      case c::NamedValueType::kInt64:
        result[name] = nv.int64_value;
        break;
      case c::NamedValueType::kInt64List:
        result[name] = std::vector<int64_t>(
            nv.int64_array_value, nv.int64_array_value + nv.value_size);
        break;
      case c::NamedValueType::kFloat:
        result[name] = nv.float_value;
        break;
      case c::NamedValueType::kBool:
        result[name] = nv.bool_value;
        break;
    }
  }
  return result;
}

std::string attribute_to_string(const AttributeValue& value) {
  struct Visitor {
    std::string operator()(const std::string& s) const { return s; }
    std::string operator()(int64_t v) const { return std::to_string(v); }
    std::string operator()(const std::vector<int64_t>& v) const {
      std::string out;
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ".";
        out += std::to_string(v[i]);
      }
      return out;
    }
    std::string operator()(float v) const { return std::to_string(v); }
    std::string operator()(bool v) const { return v ? "true" : "false"; }
  };
  return std::visit(Visitor{}, value);
}

}  // namespace torch_tpu::pjrt
