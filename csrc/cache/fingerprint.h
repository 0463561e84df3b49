// A 128-bit non-cryptographic hash for program fingerprints, checksums and
// cache file names.
//
// 128 bits so that accidental collisions are out of the question for any
// number of programs a process or a cache directory will ever see. It is not
// a defence against a deliberate collision: the disk tier verifies a hit by
// comparing the full program, and never trusts the hash alone.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

namespace torch_tpu::cache {

struct Fingerprint {
  uint64_t hi = 0;
  uint64_t lo = 0;

  // 32 lowercase hex digits, hi first.
  std::string to_hex() const;

  friend bool operator==(const Fingerprint& a, const Fingerprint& b) {
    return a.hi == b.hi && a.lo == b.lo;
  }
  friend bool operator!=(const Fingerprint& a, const Fingerprint& b) {
    return !(a == b);
  }
};

// Incremental hashing: the result depends only on the concatenation of the
// bytes given to update(), never on how they were split. Frame variable-length
// fields yourself (e.g. with update_u64(size)) when concatenation alone would
// be ambiguous.
class Hasher {
 public:
  Hasher();
  Hasher& update(std::string_view bytes);
  Hasher& update_u64(uint64_t value);  // 8 bytes, little-endian
  Fingerprint finish() const;

 private:
  void block(const unsigned char* p);

  uint64_t a_;
  uint64_t b_;
  uint64_t length_ = 0;
  unsigned char pending_[16];
  size_t pending_size_ = 0;
};

Fingerprint fingerprint(std::string_view bytes);

}  // namespace torch_tpu::cache

template <>
struct std::hash<torch_tpu::cache::Fingerprint> {
  // Both halves are already well mixed; either alone is a fine bucket hash.
  size_t operator()(const torch_tpu::cache::Fingerprint& f) const noexcept {
    return static_cast<size_t>(f.lo);
  }
};
