// The compile cache: per-op key -> loaded executable, shared by every mode.
//
// Two in-memory maps and a disk tier:
//   key         -> executable   the hot path; the caller's key (op name,
//                               attributes, input types) is looked up before
//                               any HLO text exists
//   fingerprint -> executable   programs deduplicated by content, so two
//                               keys that lower to the same program share
//                               one executable and one compile
//   DiskCache                   serialized executables across processes
//
// Locking: one shared_mutex guards both maps. A hit takes it shared, copies
// a shared_ptr and leaves. A miss takes it exclusively only to claim or find
// an in-flight slot; building the program, disk I/O and compiling all run
// with no lock held. Other threads that miss on the same key (or on the same
// program fingerprint) wait on the first one's shared_future, so each
// program is compiled once. A failure reaches every waiter as the same
// exception and removes the slot, so a later request retries.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <future>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cache/disk_cache.h"
#include "cache/fingerprint.h"
#include "pjrt/client.h"
#include "pjrt/compile_options.h"
#include "pjrt/executable.h"

namespace torch_tpu::cache {

// Every request ends as exactly one of memory_hits, disk_hits or compiles,
// unless it fails. A request that waited for another thread's compile of the
// same key or program counts as a memory hit.
struct CacheStats {
  int64_t requests = 0;
  int64_t memory_hits = 0;
  int64_t disk_hits = 0;
  int64_t compiles = 0;
  int64_t disk_writes = 0;
  int64_t disk_errors = 0;      // rejected entries, failed loads and writes
  double compile_seconds = 0;   // inside Client::compile, failures included
  double disk_load_seconds = 0; // disk lookups and deserialization
};

class CompileCache {
 public:
  using Executable = pjrt::LoadedExecutable;
  using ProgramBuilder = std::function<std::string()>;

  // `disk_dir`: nullopt or empty for no disk tier.
  CompileCache(std::shared_ptr<pjrt::Client> client,
               std::optional<std::string> disk_dir,
               pjrt::CompileOptions default_options = {});
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // Returns the executable for `key`, calling `build_program` (StableHLO
  // text) only on a miss. The key must determine the options too: they are
  // not part of the key lookup. Errors from build_program and compile
  // (pjrt::PjrtError) propagate unchanged. `build_program` must not request
  // the same key from this cache (it would wait for itself).
  std::shared_ptr<Executable> get_or_compile(std::string_view key,
                                             const ProgramBuilder& build_program);
  std::shared_ptr<Executable> get_or_compile(std::string_view key,
                                             const ProgramBuilder& build_program,
                                             const pjrt::CompileOptions& options);

  CacheStats stats() const;
  void reset_stats();
  // Programs this thread has compiled (not loaded from disk), in any
  // cache: a caller compares it around get_or_compile to learn whether
  // its lookup compiled.
  static uint64_t compiles_on_this_thread();
  // Drops the in-memory executables (the disk tier is kept). Compiles in
  // flight finish and are kept.
  void clear_memory();
  // Keys with a ready executable.
  size_t memory_entries() const;
  // Distinct ready executables (<= memory_entries()).
  size_t memory_executables() const;
  // The disk tier's root directory as given, nullopt without a disk tier.
  std::optional<std::string> disk_dir() const;
  // The disk tier itself (entries live in disk()->directory()), or null.
  const DiskCache* disk() const { return disk_.get(); }

  const pjrt::Client& client() const { return *client_; }

 private:
  using Pending = std::shared_future<std::shared_ptr<Executable>>;

  // One slot per key or per program. `executable` is set once ready; until
  // then `pending` is valid.
  struct Slot {
    std::shared_ptr<Executable> executable;
    Pending pending;
  };
  // The map's string_view keys point into `key`, which never moves since
  // the KeySlot sits behind a unique_ptr: lookups need no allocation.
  struct KeySlot : Slot {
    std::string key;
  };

  // A program's executable, and whether it was just compiled and should be
  // written to disk (done after waiters are released, not before).
  struct Resolved {
    std::shared_ptr<Executable> executable;
    bool store = false;
    Fingerprint fingerprint;
    std::string record;
  };

  std::shared_ptr<Executable> miss(std::string_view key, const ProgramBuilder& build,
                                   const pjrt::CompileOptions& options);
  Resolved resolve_program(const std::string& text, const pjrt::CompileOptions& options);
  Resolved load_or_compile(const Fingerprint& fingerprint, std::string record,
                           const std::string& text, const pjrt::CompileOptions& options);
  void store_to_disk(const Resolved& resolved);

  std::shared_ptr<pjrt::Client> client_;
  pjrt::CompileOptions default_options_;
  std::unique_ptr<DiskCache> disk_;

  mutable std::shared_mutex mutex_;
  std::unordered_map<std::string_view, std::unique_ptr<KeySlot>> keys_;
  std::unordered_map<Fingerprint, Slot> programs_;

  std::atomic<int64_t> requests_{0};
  std::atomic<int64_t> memory_hits_{0};
  std::atomic<int64_t> disk_hits_{0};
  std::atomic<int64_t> compiles_{0};
  std::atomic<int64_t> disk_writes_{0};
  std::atomic<int64_t> disk_errors_{0};
  std::atomic<int64_t> compile_nanos_{0};
  std::atomic<int64_t> disk_load_nanos_{0};
  std::atomic<bool> serialize_failure_reported_{false};
};

// The string a DiskCache uses to tell plugins apart: platform name and
// version, the plugin's xla_version and stablehlo_current_version
// attributes when present, the plugin library's size in bytes, the PJRT API
// version and the first device kind.
std::string plugin_identity(const pjrt::Client& client);

}  // namespace torch_tpu::cache
