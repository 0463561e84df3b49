#include "runtime/runtime.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <string>

#include "hlo/target_quirks.h"
#include "runtime/config.h"

namespace torch_tpu::runtime {

namespace {

std::mutex g_init_mutex;
// Never destroyed: plugins keep threads and static state that must not be
// torn down while Python finalizes.
// Read without the lock on the hot path (Runtime::get()).
std::atomic<Runtime*> g_runtime{nullptr};

// One "name=value" of a list of client options, typed by the value's
// spelling: the plugin rejects an option of the wrong type by name.
pjrt::ClientOption parse_client_option(const std::string& item) {
  const size_t eq = item.find('=');
  if (eq == std::string::npos || eq == 0) {
    throw std::invalid_argument(std::string(config::kClientOptions.name) + ": '" + item +
                                "' is not of the form name=value");
  }
  std::string name = item.substr(0, eq);
  std::string value = item.substr(eq + 1);
  if (value == "true" || value == "false") return {name, value == "true"};
  try {
    size_t used = 0;
    const int64_t integer = std::stoll(value, &used);
    if (used == value.size()) return {name, integer};
    const float real = std::stof(value, &used);
    if (used == value.size()) return {name, real};
  } catch (const std::exception&) {
  }
  return {name, value};
}

// The platform's defaults, then the variables, each a comma-separated
// "name=value" list: a later option replaces an earlier one of its name.
std::vector<pjrt::ClientOption> client_options(const std::string& platform_defaults) {
  std::vector<pjrt::ClientOption> options;
  auto set = [&options](pjrt::ClientOption option) {
    for (auto& existing : options) {
      if (existing.name == option.name) {
        existing = std::move(option);
        return;
      }
    }
    options.push_back(std::move(option));
  };
  auto set_listed = [&set](const std::string& listed) {
    size_t start = 0;
    while (start < listed.size()) {
      size_t end = listed.find(',', start);
      if (end == std::string::npos) end = listed.size();
      if (end > start) set(parse_client_option(listed.substr(start, end - start)));
      start = end + 1;
    }
  };
  set_listed(platform_defaults);
  if (auto count = config::get_int(config::kCpuDeviceCount)) {
    set({"cpu_device_count", *count});
  }
  set_listed(config::get(config::kClientOptions));
  return options;
}

// Options every program is compiled with on this platform.
pjrt::CompileOptions default_compile_options(const pjrt::Client& client) {
  pjrt::CompileOptions options;
  // Every op's result is rounded to its type, as PyTorch's kernels round it:
  // a fused graph or compiled program then computes what the same ops in
  // strict eager compute (XLA would otherwise keep bf16 / f16 intermediates
  // in f32 where that is cheaper). The CPU compiler still contracts a
  // multiply and an add into one fused multiply-add; no option stops it
  // (docs/status.md).
  options.env_option_overrides["xla_allow_excess_precision"] = false;
  if (client.platform_name() == "cpu") {
    // XLA's CPU compiler defaults to min/max that drop a NaN in the second
    // operand; PyTorch propagates NaN from either side.
    options.env_option_overrides["xla_cpu_enable_fast_min_max"] = false;
  }
  return options;
}

}  // namespace

std::string default_cache_dir() {
  std::string dir = config::get(config::kCacheDir);
  if (!dir.empty()) return dir;
  // XDG_CACHE_HOME and HOME are the platform's variables, not ours.
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg && *xdg) {
    return std::string(xdg) + "/torch_tpu";
  }
  if (const char* home = std::getenv("HOME"); home && *home) {
    return std::string(home) + "/.cache/torch_tpu";
  }
  return "/tmp/torch_tpu_cache";
}

Runtime::Runtime(const std::string& plugin_path, const std::string& default_options)
    : plugin_path_(plugin_path) {
  auto plugin = pjrt::Plugin::load(plugin_path);
  client_ = pjrt::Client::create(plugin, client_options(default_options));
  hlo::TargetQuirks quirks;
  quirks.unfused_column_reductions = client_->platform_name() == "cpu";
  hlo::set_target_quirks(quirks);
  std::optional<std::string> disk_dir;
  if (config::get_bool(config::kDiskCache)) {
    cache_dir_ = default_cache_dir();
    disk_dir = cache_dir_;
  }
  compile_cache_ = std::make_unique<cache::CompileCache>(
      client_, disk_dir, default_compile_options(*client_));
}

Runtime& Runtime::initialize(const std::string& plugin_path, const std::string& default_options) {
  std::lock_guard<std::mutex> lock(g_init_mutex);
  if (Runtime* existing = g_runtime.load()) {
    if (existing->plugin_path_ != plugin_path) {
      throw std::runtime_error(
          "torch_tpu is already running on the PJRT plugin '" +
          existing->plugin_path_ + "'; a process cannot switch to '" +
          plugin_path + "'");
    }
    return *existing;
  }
  auto* runtime = new Runtime(plugin_path, default_options);
  g_runtime.store(runtime, std::memory_order_release);
  return *runtime;
}

bool Runtime::is_initialized() {
  return g_runtime.load(std::memory_order_acquire) != nullptr;
}

Runtime& Runtime::get() {
  Runtime* runtime = g_runtime.load(std::memory_order_acquire);
  if (runtime == nullptr) {
    throw std::runtime_error(
        "the torch_tpu runtime is not initialized (call "
        "torch_tpu.runtime.initialize() or use the device)");
  }
  return *runtime;
}

}  // namespace torch_tpu::runtime
