#include "runtime/runtime.h"

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <stdexcept>

#include "runtime/config.h"

namespace torch_tpu::runtime {

namespace {

std::mutex g_init_mutex;
// Never destroyed: plugins keep threads and static state that must not be
// torn down while Python finalizes.
// Read without the lock on the hot path (Runtime::get()).
std::atomic<Runtime*> g_runtime{nullptr};

std::vector<pjrt::ClientOption> client_options(const pjrt::Plugin& plugin) {
  std::vector<pjrt::ClientOption> options;
  if (auto count = config::get_int(config::kCpuDeviceCount)) {
    options.push_back({"cpu_device_count", *count});
  }
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

Runtime::Runtime(const std::string& plugin_path) : plugin_path_(plugin_path) {
  auto plugin = pjrt::Plugin::load(plugin_path);
  client_ = pjrt::Client::create(plugin, client_options(*plugin));
  std::optional<std::string> disk_dir;
  if (config::get_bool(config::kDiskCache)) {
    cache_dir_ = default_cache_dir();
    disk_dir = cache_dir_;
  }
  compile_cache_ = std::make_unique<cache::CompileCache>(
      client_, disk_dir, default_compile_options(*client_));
}

Runtime& Runtime::initialize(const std::string& plugin_path) {
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
  auto* runtime = new Runtime(plugin_path);
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
