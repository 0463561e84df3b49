// The process-wide runtime: the loaded plugin, its client and the compile
// cache that every execution mode shares. Created once, on first use of
// the device, from the plugin path the Python layer discovered.
#pragma once

#include <memory>
#include <string>

#include "cache/compile_cache.h"
#include "pjrt/client.h"
#include "pjrt/plugin.h"

namespace torch_tpu::runtime {

class Runtime {
 public:
  // Loads the plugin and creates the client; throws when the plugin cannot
  // be used. Calling it again with the same path returns the same runtime;
  // with another path it throws (a process has one device platform).
  // `default_options` are the platform's client options, in the form of
  // TORCH_TPU_PJRT_CLIENT_OPTIONS, which overrides them by name.
  static Runtime& initialize(const std::string& plugin_path, const std::string& default_options = "");
  static bool is_initialized();
  // Throws std::runtime_error when initialize() has not run.
  static Runtime& get();

  const std::string& plugin_path() const { return plugin_path_; }
  pjrt::Client& client() const { return *client_; }
  const std::shared_ptr<pjrt::Client>& client_ptr() const { return client_; }
  cache::CompileCache& compile_cache() const { return *compile_cache_; }
  // Directory of the disk tier; empty when it is disabled.
  const std::string& cache_dir() const { return cache_dir_; }

 private:
  Runtime(const std::string& plugin_path, const std::string& default_options);

  std::string plugin_path_;
  std::shared_ptr<pjrt::Client> client_;
  std::string cache_dir_;
  std::unique_ptr<cache::CompileCache> compile_cache_;
};

// $TORCH_TPU_CACHE_DIR, else $XDG_CACHE_HOME/torch_tpu, else
// $HOME/.cache/torch_tpu.
std::string default_cache_dir();

}  // namespace torch_tpu::runtime
