#include "cache/compile_cache.h"

#include <sys/stat.h>

#include <chrono>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <utility>
#include <vector>

#include "cache/warnings.h"
#include "pjrt/plugin.h"

namespace torch_tpu::cache {

namespace {

using Clock = std::chrono::steady_clock;

thread_local uint64_t thread_compiles = 0;  // compiles_on_this_thread()

int64_t nanos_since(Clock::time_point start) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - start)
      .count();
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

// Everything that decides the compiled code: the framed serialized options,
// then the text. The fingerprint hashes exactly these bytes, and the disk
// tier stores them to verify a hit.
Fingerprint program_fingerprint(const std::string& options, std::string_view text) {
  return Hasher().update_u64(options.size()).update(options).update(text).finish();
}

std::string program_record(const std::string& options, std::string_view text) {
  std::string record;
  record.reserve(8 + options.size() + text.size());
  put_u64(record, options.size());
  record += options;
  record.append(text.data(), text.size());
  return record;
}

}  // namespace

std::string plugin_identity(const pjrt::Client& client) {
  std::string id = "platform=" + client.platform_name() +
                   "\nplatform_version=" + client.platform_version();
  try {
    const auto attributes = client.plugin().attributes();
    for (const char* name : {"xla_version", "stablehlo_current_version"}) {
      auto it = attributes.find(name);
      if (it != attributes.end()) {
        id += std::string("\n") + name + "=" + pjrt::attribute_to_string(it->second);
      }
    }
  } catch (const std::exception&) {
    // A plugin without attributes is identified by the rest.
  }
  // Version strings are coarse for some plugins (the CPU wheel reports
  // "cpu"); the library's size tells most rebuilds apart while still letting
  // identical installs in different environments share entries.
  struct stat st;
  if (::stat(client.plugin().path().c_str(), &st) == 0) {
    id += "\nplugin_size=" + std::to_string(static_cast<int64_t>(st.st_size));
  }
  id += "\npjrt_api=" + std::to_string(client.plugin().api_major()) + "." +
        std::to_string(client.plugin().api_minor());
  id += "\ndevice_kind=" +
        (client.devices().empty() ? std::string("none") : client.devices()[0].kind);
  // XLA's own option variables (the platform's, not ours) change what the
  // compiler builds, as libtpu's do on a TPU: an executable compiled under
  // other flags is not reused.
  for (const char* variable : {"XLA_FLAGS", "LIBTPU_INIT_ARGS"}) {
    if (const char* value = std::getenv(variable); value && *value) {
      id += std::string("\n") + variable + "=" + value;
    }
  }
  return id;
}

CompileCache::CompileCache(std::shared_ptr<pjrt::Client> client,
                           std::optional<std::string> disk_dir,
                           pjrt::CompileOptions default_options)
    : client_(std::move(client)), default_options_(std::move(default_options)) {
  if (disk_dir && !disk_dir->empty()) {
    disk_ = std::make_unique<DiskCache>(std::move(*disk_dir), client_->platform_name(),
                                        plugin_identity(*client_));
  }
}

CompileCache::~CompileCache() = default;

std::shared_ptr<CompileCache::Executable> CompileCache::get_or_compile(
    std::string_view key, const ProgramBuilder& build_program) {
  return get_or_compile(key, build_program, default_options_);
}

std::shared_ptr<CompileCache::Executable> CompileCache::get_or_compile(
    std::string_view key, const ProgramBuilder& build_program,
    const pjrt::CompileOptions& options) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  {
    std::shared_lock<std::shared_mutex> lock(mutex_);
    auto it = keys_.find(key);
    if (it != keys_.end() && it->second->executable) {
      memory_hits_.fetch_add(1, std::memory_order_relaxed);
      return it->second->executable;
    }
  }
  return miss(key, build_program, options);
}

std::shared_ptr<CompileCache::Executable> CompileCache::miss(
    std::string_view key, const ProgramBuilder& build,
    const pjrt::CompileOptions& options) {
  std::promise<std::shared_ptr<Executable>> promise;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = keys_.find(key);
    if (it != keys_.end()) {
      // Ready since the shared lookup, or another thread is on it.
      if (auto executable = it->second->executable) {
        memory_hits_.fetch_add(1, std::memory_order_relaxed);
        return executable;
      }
      Pending pending = it->second->pending;
      lock.unlock();
      auto executable = pending.get();  // rethrows the leader's exception
      memory_hits_.fetch_add(1, std::memory_order_relaxed);
      return executable;
    }
    auto slot = std::make_unique<KeySlot>();
    slot->key.assign(key.data(), key.size());
    slot->pending = promise.get_future().share();
    const std::string_view stable_key = slot->key;
    keys_.emplace(stable_key, std::move(slot));
  }

  Resolved resolved;
  try {
    resolved = resolve_program(build(), options);
  } catch (...) {
    {
      std::unique_lock<std::shared_mutex> lock(mutex_);
      keys_.erase(key);  // not poisoned: the next request retries
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    KeySlot& slot = *keys_.find(key)->second;  // in-flight slots are never erased
    slot.executable = resolved.executable;
    slot.pending = Pending();
  }
  promise.set_value(resolved.executable);
  if (resolved.store) store_to_disk(resolved);
  return resolved.executable;
}

CompileCache::Resolved CompileCache::resolve_program(
    const std::string& text, const pjrt::CompileOptions& options) {
  const std::string serialized_options = options.serialize();
  const Fingerprint fingerprint = program_fingerprint(serialized_options, text);

  std::promise<std::shared_ptr<Executable>> promise;
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    auto it = programs_.find(fingerprint);
    if (it != programs_.end()) {
      // Another key lowered to the same program.
      Resolved shared;
      if (it->second.executable) {
        shared.executable = it->second.executable;
      } else {
        Pending pending = it->second.pending;
        lock.unlock();
        shared.executable = pending.get();
      }
      memory_hits_.fetch_add(1, std::memory_order_relaxed);
      return shared;
    }
    programs_[fingerprint].pending = promise.get_future().share();
  }

  Resolved resolved;
  try {
    resolved = load_or_compile(
        fingerprint, disk_ ? program_record(serialized_options, text) : std::string(),
        text, options);
  } catch (...) {
    {
      std::unique_lock<std::shared_mutex> lock(mutex_);
      programs_.erase(fingerprint);
    }
    promise.set_exception(std::current_exception());
    throw;
  }
  {
    std::unique_lock<std::shared_mutex> lock(mutex_);
    Slot& slot = programs_[fingerprint];
    slot.executable = resolved.executable;
    slot.pending = Pending();
  }
  promise.set_value(resolved.executable);
  return resolved;
}

uint64_t CompileCache::compiles_on_this_thread() { return thread_compiles; }

CompileCache::Resolved CompileCache::load_or_compile(
    const Fingerprint& fingerprint, std::string record, const std::string& text,
    const pjrt::CompileOptions& options) {
  Resolved resolved;
  resolved.fingerprint = fingerprint;
  if (disk_) {
    const auto start = Clock::now();
    bool rejected = false;
    std::optional<std::string> bytes = disk_->load(fingerprint, record, &rejected);
    if (rejected) disk_errors_.fetch_add(1, std::memory_order_relaxed);
    if (bytes) {
      try {
        resolved.executable = client_->deserialize(*bytes);
      } catch (const std::exception& e) {
        // Same identity but unloadable, e.g. another build of the plugin
        // with the same version strings. Recompile and overwrite it.
        disk_errors_.fetch_add(1, std::memory_order_relaxed);
        warn("could not load compile cache entry " + disk_->entry_path(fingerprint) +
             " (" + e.what() + "); recompiling");
        disk_->remove(fingerprint);
      }
    }
    disk_load_nanos_.fetch_add(nanos_since(start), std::memory_order_relaxed);
    if (resolved.executable) {
      disk_hits_.fetch_add(1, std::memory_order_relaxed);
      return resolved;
    }
  }

  const auto start = Clock::now();
  try {
    resolved.executable = client_->compile(text, options);
  } catch (...) {
    compile_nanos_.fetch_add(nanos_since(start), std::memory_order_relaxed);
    throw;
  }
  compile_nanos_.fetch_add(nanos_since(start), std::memory_order_relaxed);
  compiles_.fetch_add(1, std::memory_order_relaxed);
  ++thread_compiles;
  resolved.store = disk_ != nullptr;
  resolved.record = std::move(record);
  return resolved;
}

void CompileCache::store_to_disk(const Resolved& resolved) {
  std::string bytes;
  try {
    bytes = resolved.executable->serialize();
  } catch (const std::exception& e) {
    disk_errors_.fetch_add(1, std::memory_order_relaxed);
    if (!serialize_failure_reported_.exchange(true)) {
      warn(std::string("cannot serialize compiled programs for the disk cache (") +
           e.what() + "); they will not be cached on disk");
    }
    return;
  }
  if (disk_->store(resolved.fingerprint, resolved.record, bytes)) {
    disk_writes_.fetch_add(1, std::memory_order_relaxed);
  } else {
    disk_errors_.fetch_add(1, std::memory_order_relaxed);
  }
}

CacheStats CompileCache::stats() const {
  CacheStats s;
  s.requests = requests_.load(std::memory_order_relaxed);
  s.memory_hits = memory_hits_.load(std::memory_order_relaxed);
  s.disk_hits = disk_hits_.load(std::memory_order_relaxed);
  s.compiles = compiles_.load(std::memory_order_relaxed);
  s.disk_writes = disk_writes_.load(std::memory_order_relaxed);
  s.disk_errors = disk_errors_.load(std::memory_order_relaxed);
  s.compile_seconds = compile_nanos_.load(std::memory_order_relaxed) * 1e-9;
  s.disk_load_seconds = disk_load_nanos_.load(std::memory_order_relaxed) * 1e-9;
  return s;
}

void CompileCache::reset_stats() {
  for (auto* counter : {&requests_, &memory_hits_, &disk_hits_, &compiles_, &disk_writes_,
                        &disk_errors_, &compile_nanos_, &disk_load_nanos_}) {
    counter->store(0, std::memory_order_relaxed);
  }
}

void CompileCache::clear_memory() {
  // Executables are destroyed outside the lock (their destructors call into
  // the plugin).
  std::vector<std::shared_ptr<Executable>> dropped;
  std::unique_lock<std::shared_mutex> lock(mutex_);
  for (auto it = keys_.begin(); it != keys_.end();) {
    if (it->second->executable) {
      dropped.push_back(std::move(it->second->executable));
      it = keys_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = programs_.begin(); it != programs_.end();) {
    if (it->second.executable) {
      dropped.push_back(std::move(it->second.executable));
      it = programs_.erase(it);
    } else {
      ++it;
    }
  }
  lock.unlock();
}

size_t CompileCache::memory_entries() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& entry : keys_) n += entry.second->executable != nullptr;
  return n;
}

size_t CompileCache::memory_executables() const {
  std::shared_lock<std::shared_mutex> lock(mutex_);
  size_t n = 0;
  for (const auto& entry : programs_) n += entry.second.executable != nullptr;
  return n;
}

std::optional<std::string> CompileCache::disk_dir() const {
  if (!disk_) return std::nullopt;
  return disk_->root();
}

}  // namespace torch_tpu::cache
