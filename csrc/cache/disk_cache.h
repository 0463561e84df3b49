// The disk tier of the compile cache: serialized executables that outlive
// the process.
//
// Layout: <root>/<platform>-<hash of identity>/<program fingerprint>.exe
//
// The identity names everything that decides whether a serialized
// executable can be loaded again (platform, plugin and XLA versions, PJRT
// API version, device kind); entries of other plugins live in other
// directories and are never opened.
//
// Entry file format, all integers little-endian:
//   8 bytes   magic "TTPUEXEC"
//   u32       format version (kFormatVersion)
//   u64 + n   identity        (length, then bytes)
//   u64 + n   program         (length, then bytes)
//   u64 + n   executable      (length, then bytes: LoadedExecutable::serialize)
//   16 bytes  checksum: Fingerprint of every byte above (hi, then lo)
// and nothing after. A hit requires the identity and the program to equal
// the caller's exactly, so a fingerprint collision can never return the
// wrong executable; the checksum catches torn or damaged files.
//
// Every operation is safe to call from several threads and processes at
// once: writes go to a private temporary file that is renamed over the
// entry, so a reader sees a whole old entry, a whole new one, or none.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "cache/fingerprint.h"

namespace torch_tpu::cache {

class DiskCache {
 public:
  static constexpr uint32_t kFormatVersion = 1;

  // Creates nothing on disk until the first store().
  DiskCache(std::string root, std::string_view platform, std::string identity);

  // The serialized executable stored for `program`, or nullopt. A missing
  // entry is silent. An entry that is unreadable, truncated, corrupt,
  // written for another identity or another program, or not safely owned
  // (another user's file, group/world-writable, a symlink) yields one
  // warning and nullopt, sets *rejected, and is removed when it is ours.
  std::optional<std::string> load(const Fingerprint& fingerprint,
                                  std::string_view program,
                                  bool* rejected = nullptr) const;

  // Writes the entry atomically with owner-only permissions (directories
  // 0700, file 0600). Returns false on failure (read-only directory, disk
  // full, ...); never throws. The first failure warns, later ones are quiet
  // so a read-only cache does not warn on every compile.
  bool store(const Fingerprint& fingerprint, std::string_view program,
             std::string_view executable) const;

  // Best-effort removal of an entry (e.g. one the plugin refused to load).
  void remove(const Fingerprint& fingerprint) const;

  const std::string& root() const { return root_; }
  // <root>/<platform>-<hash of identity>
  const std::string& directory() const { return directory_; }
  const std::string& identity() const { return identity_; }
  std::string entry_path(const Fingerprint& fingerprint) const;

 private:
  std::string root_;
  std::string identity_;
  std::string directory_;
  mutable std::atomic<bool> directory_ready_{false};
  mutable std::atomic<bool> store_failure_reported_{false};
};


}  // namespace torch_tpu::cache
