#include "cache/fingerprint.h"

#include <algorithm>
#include <cstring>

namespace torch_tpu::cache {

namespace {

// Lane seeds and multipliers: arbitrary odd 64-bit constants with well
// spread bits. Changing any of them changes every fingerprint (and so every
// disk cache file name); bump DiskCache's format version if you do.
constexpr uint64_t kSeedA = 0x243f6a8885a308d3ULL;
constexpr uint64_t kSeedB = 0x13198a2e03707345ULL;
constexpr uint64_t kMulA = 0x9e3779b97f4a7c15ULL;
constexpr uint64_t kMulB = 0xd6e8feb86659fd93ULL;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

// A bijective avalanche step: every input bit affects every output bit.
uint64_t mix(uint64_t x) {
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  x *= 0xd6e8feb86659fd93ULL;
  x ^= x >> 32;
  return x;
}

// Little-endian on every host, so fingerprints (file names) are portable.
uint64_t load_le64(const unsigned char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::string Fingerprint::to_hex() const {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(32, '0');
  for (int i = 0; i < 16; ++i) {
    out[15 - i] = kDigits[(hi >> (4 * i)) & 0xf];
    out[31 - i] = kDigits[(lo >> (4 * i)) & 0xf];
  }
  return out;
}

Hasher::Hasher() : a_(kSeedA), b_(kSeedB) {}

// Two lanes, each fed one word of the 16-byte block through its own
// bijective mix, then coupled, so a difference in either word reaches both.
void Hasher::block(const unsigned char* p) {
  const uint64_t w0 = load_le64(p);
  const uint64_t w1 = load_le64(p + 8);
  a_ = rotl(a_ ^ mix(w0 + kSeedA), 29) * kMulA + b_;
  b_ = rotl(b_ ^ mix(w1 ^ kSeedB), 31) * kMulB + a_;
}

Hasher& Hasher::update(std::string_view bytes) {
  const auto* p = reinterpret_cast<const unsigned char*>(bytes.data());
  size_t n = bytes.size();
  length_ += n;
  if (pending_size_ > 0) {
    const size_t take = std::min(n, sizeof pending_ - pending_size_);
    std::memcpy(pending_ + pending_size_, p, take);
    pending_size_ += take;
    p += take;
    n -= take;
    if (pending_size_ < sizeof pending_) return *this;
    block(pending_);
    pending_size_ = 0;
  }
  for (; n >= 16; p += 16, n -= 16) block(p);
  if (n > 0) {
    std::memcpy(pending_, p, n);
    pending_size_ = n;
  }
  return *this;
}

Hasher& Hasher::update_u64(uint64_t value) {
  unsigned char bytes[8];
  for (int i = 0; i < 8; ++i) bytes[i] = static_cast<unsigned char>(value >> (8 * i));
  return update(std::string_view(reinterpret_cast<const char*>(bytes), 8));
}

Fingerprint Hasher::finish() const {
  Hasher h = *this;
  if (h.pending_size_ > 0) {
    // Zero padding is unambiguous because the length is mixed in below.
    std::memset(h.pending_ + h.pending_size_, 0, sizeof h.pending_ - h.pending_size_);
    h.block(h.pending_);
  }
  uint64_t a = h.a_ ^ h.length_;
  uint64_t b = h.b_ ^ rotl(h.length_, 32) ^ kMulA;
  a += b;
  b += a;
  a = mix(a ^ kSeedB);
  b = mix(b + kSeedA);
  a += b;
  b += a;
  return Fingerprint{a, b};
}

Fingerprint fingerprint(std::string_view bytes) {
  return Hasher().update(bytes).finish();
}

}  // namespace torch_tpu::cache
