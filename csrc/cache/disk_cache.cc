#include "cache/disk_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <cstring>
#include <utility>

#include "cache/warnings.h"

namespace torch_tpu::cache {

namespace {

constexpr char kMagic[8] = {'T', 'T', 'P', 'U', 'E', 'X', 'E', 'C'};
constexpr size_t kChecksumSize = 16;
constexpr const char* kSuffix = ".exe";

std::string errno_text(int error) { return std::strerror(error); }

std::string sanitize(std::string_view name) {
  std::string out;
  for (char ch : name.substr(0, 32)) {
    const unsigned char c = static_cast<unsigned char>(ch);
    out += (std::isalnum(c) || c == '-' || c == '_' || c == '.')
               ? static_cast<char>(std::tolower(c))
               : '_';
  }
  return out.empty() ? "unknown" : out;
}

void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
}

void put_field(std::string& out, std::string_view bytes) {
  put_u64(out, bytes.size());
  out.append(bytes.data(), bytes.size());
}

// Bounds-checked reader over an entry; every method fails instead of reading
// past the end, so a truncated or hostile file cannot overrun.
class Reader {
 public:
  explicit Reader(std::string_view data) : data_(data) {}
  bool bytes(size_t n, std::string_view* out) {
    if (n > data_.size() - pos_) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  bool u64(uint64_t* out) {
    std::string_view b;
    if (!bytes(8, &b)) return false;
    *out = 0;
    for (int i = 7; i >= 0; --i) *out = (*out << 8) | static_cast<unsigned char>(b[i]);
    return true;
  }
  bool u32(uint32_t* out) {
    std::string_view b;
    if (!bytes(4, &b)) return false;
    *out = 0;
    for (int i = 3; i >= 0; --i) *out = (*out << 8) | static_cast<unsigned char>(b[i]);
    return true;
  }
  bool field(std::string_view* out) {
    uint64_t n;
    return u64(&n) && n <= data_.size() && bytes(static_cast<size_t>(n), out);
  }
  size_t position() const { return pos_; }

 private:
  std::string_view data_;
  size_t pos_ = 0;
};

std::string checksum_bytes(std::string_view data) {
  const Fingerprint f = fingerprint(data);
  std::string out;
  put_u64(out, f.hi);
  put_u64(out, f.lo);
  return out;
}

// Returns "" when `data` is a valid entry for (identity, program) and sets
// *executable; otherwise the reason it is not.
std::string parse_entry(std::string_view data, std::string_view identity,
                        std::string_view program, std::string_view* executable) {
  if (data.size() < sizeof kMagic + 4 + 3 * 8 + kChecksumSize) return "truncated";
  Reader r(data);
  std::string_view magic;
  uint32_t version = 0;
  r.bytes(sizeof kMagic, &magic);
  if (magic != std::string_view(kMagic, sizeof kMagic)) return "not a torch_tpu cache entry";
  r.u32(&version);
  if (version != DiskCache::kFormatVersion) {
    return "format version " + std::to_string(version) + ", expected " +
           std::to_string(DiskCache::kFormatVersion);
  }
  std::string_view stored_identity, stored_program, stored_executable, checksum;
  if (!r.field(&stored_identity) || !r.field(&stored_program) ||
      !r.field(&stored_executable)) {
    return "truncated";
  }
  const size_t body = r.position();
  if (!r.bytes(kChecksumSize, &checksum) || r.position() != data.size()) {
    return "truncated or trailing bytes";
  }
  if (checksum != checksum_bytes(data.substr(0, body))) return "checksum mismatch";
  if (stored_identity != identity) return "written by another plugin or XLA version";
  if (stored_program != program) return "stored program differs (fingerprint collision)";
  *executable = stored_executable;
  return "";
}

bool read_fully(int fd, char* out, size_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, out, n);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= static_cast<size_t>(got);
  }
  return true;
}

bool write_fully(int fd, const char* data, size_t n) {
  while (n > 0) {
    const ssize_t put = ::write(fd, data, n);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) return false;
    data += put;
    n -= static_cast<size_t>(put);
  }
  return true;
}

// mkdir -p with mode 0700 for every directory it creates. Existing parents
// (e.g. ~/.cache) keep their permissions.
bool make_directories(const std::string& path, std::string* error) {
  for (size_t pos = 1; pos <= path.size(); ++pos) {
    if (pos != path.size() && path[pos] != '/') continue;
    const std::string prefix = path.substr(0, pos);
    if (::mkdir(prefix.c_str(), 0700) == 0 || errno == EEXIST) continue;
    *error = "cannot create " + prefix + ": " + errno_text(errno);
    return false;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = path + " is not a directory";
    return false;
  }
  return true;
}

}  // namespace

DiskCache::DiskCache(std::string root, std::string_view platform, std::string identity)
    : root_(std::move(root)), identity_(std::move(identity)) {
  while (root_.size() > 1 && root_.back() == '/') root_.pop_back();
  // The format version is part of the directory name so that torch_tpu
  // builds with different formats never read (and delete) each other's files.
  const Fingerprint id = Hasher().update_u64(kFormatVersion).update(identity_).finish();
  directory_ = root_ + "/" + sanitize(platform) + "-" + id.to_hex().substr(0, 16);
}

std::string DiskCache::entry_path(const Fingerprint& fingerprint) const {
  return directory_ + "/" + fingerprint.to_hex() + kSuffix;
}

std::optional<std::string> DiskCache::load(const Fingerprint& fingerprint,
                                           std::string_view program,
                                           bool* rejected) const {
  if (rejected) *rejected = false;
  const std::string path = entry_path(fingerprint);
  // O_NOFOLLOW: a symlink planted in the cache is refused, not followed.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  // No entry; or no directory to hold one (the cache directory is not a
  // directory: the first write says so, once).
  if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) return std::nullopt;

  auto reject = [&](const std::string& reason, bool ours) -> std::optional<std::string> {
    if (rejected) *rejected = true;
    warn("ignoring compile cache entry " + path + " (" + reason + ")" +
         (ours ? "; it was removed and will be recompiled" : ""));
    if (ours) ::unlink(path.c_str());
    return std::nullopt;
  };
  if (fd < 0) return reject("cannot open: " + errno_text(errno), false);

  // Serialized executables are native code: load only files that nobody but
  // this user could have written.
  struct stat st;
  std::string data;
  std::string problem;
  bool ours = false;
  if (::fstat(fd, &st) != 0) {
    problem = "cannot stat: " + errno_text(errno);
  } else if (!S_ISREG(st.st_mode)) {
    problem = "not a regular file";
  } else if (st.st_uid != ::geteuid()) {
    problem = "owned by another user";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    problem = "writable by other users";
  } else {
    ours = true;
    data.resize(static_cast<size_t>(st.st_size));
    if (!read_fully(fd, data.data(), data.size())) problem = "read failed";
  }
  ::close(fd);
  if (!problem.empty()) return reject(problem, ours);

  std::string_view executable;
  problem = parse_entry(data, identity_, program, &executable);
  if (!problem.empty()) return reject(problem, true);
  return std::string(executable);
}

bool DiskCache::store(const Fingerprint& fingerprint, std::string_view program,
                      std::string_view executable) const {
  std::string error;
  auto fail = [&](const std::string& reason) {
    if (!store_failure_reported_.exchange(true)) {
      warn("cannot write the compile cache in " + directory_ + " (" + reason +
           "); compiled programs will not be cached on disk (further write "
           "failures are not reported)");
    }
    return false;
  };
  if (!directory_ready_.load(std::memory_order_relaxed)) {
    if (!make_directories(directory_, &error)) return fail(error);
    directory_ready_.store(true, std::memory_order_relaxed);
  }

  std::string data;
  data.reserve(sizeof kMagic + 4 + 3 * 8 + identity_.size() + program.size() +
               executable.size() + kChecksumSize);
  data.append(kMagic, sizeof kMagic);
  put_u32(data, kFormatVersion);
  put_field(data, identity_);
  put_field(data, program);
  put_field(data, executable);
  data += checksum_bytes(data);

  // The temporary lives in the entry's directory so rename() stays on one
  // file system and is atomic. mkstemp creates it 0600; fchmod makes that
  // explicit whatever the platform's mkstemp does.
  const std::string path = entry_path(fingerprint);
  std::string temp = directory_ + "/." + fingerprint.to_hex() + ".tmp.XXXXXX";
  const int fd = ::mkstemp(temp.data());
  if (fd < 0) {
    directory_ready_.store(false, std::memory_order_relaxed);  // maybe deleted
    return fail("cannot create a file: " + errno_text(errno));
  }
  bool ok = ::fchmod(fd, 0600) == 0;
  if (!ok) error = "chmod: " + errno_text(errno);
  if (ok && !write_fully(fd, data.data(), data.size())) {
    ok = false;
    error = "write: " + errno_text(errno);
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    error = "close: " + errno_text(errno);
  }
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    error = "rename: " + errno_text(errno);
  }
  if (!ok) {
    ::unlink(temp.c_str());
    return fail(error);
  }
  return true;
}

void DiskCache::remove(const Fingerprint& fingerprint) const {
  ::unlink(entry_path(fingerprint).c_str());
}

}  // namespace torch_tpu::cache
