#include "ops/fft/fft.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

using hlo::FftType;

// The permutation that moves `chunk` (in its order) behind the other dims.
std::vector<int64_t> chunk_to_end(int64_t rank, const std::vector<int64_t>& chunk) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (std::find(chunk.begin(), chunk.end(), d) == chunk.end()) perm.push_back(d);
  }
  perm.insert(perm.end(), chunk.begin(), chunk.end());
  return perm;
}

bool is_identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

std::vector<int64_t> sizes_of(const hlo::Value& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> sizes;
  for (int64_t d : dims) sizes.push_back(x.dims()[d]);
  return sizes;
}

double product(const std::vector<int64_t>& sizes) {
  double n = 1;
  for (int64_t s : sizes) n *= static_cast<double>(s);
  return n;
}

// One stablehlo.fft over `chunk` (at most three dims, transformed in this
// order), the other dims staying where they are.
hlo::Value fft_chunk(hlo::Builder& b, const hlo::Value& x, FftType type, const std::vector<int64_t>& chunk,
                     const std::vector<int64_t>& lengths) {
  const std::vector<int64_t> perm = chunk_to_end(x.rank(), chunk);
  const bool moved = !is_identity(perm);
  hlo::Value v = b.fft(moved ? b.transpose(x, perm) : x, type, lengths);
  return moved ? b.transpose(v, inverse(perm)) : v;
}

// Groups of at most three dims, in order.
std::vector<std::vector<int64_t>> groups_of_three(const std::vector<int64_t>& dims) {
  std::vector<std::vector<int64_t>> groups;
  for (size_t i = 0; i < dims.size(); i += 3) {
    groups.emplace_back(dims.begin() + i, dims.begin() + std::min(dims.size(), i + 3));
  }
  return groups;
}

double norm_factor(FftNorm norm, double n) {
  switch (norm) {
    case FftNorm::kNone: return 1;
    case FftNorm::kByRootN: return 1 / std::sqrt(n);
    case FftNorm::kByN: return 1 / n;
  }
  return 1;
}

hlo::Value scale(hlo::Builder& b, const hlo::Value& x, double factor) {
  if (factor == 1) return x;
  return b.multiply(x, b.constant_splat(factor, x.type()));
}

ElementType complex_of(ElementType t) { return t == ElementType::kF64 ? ElementType::kC128 : ElementType::kC64; }

void check_dims(const hlo::Value& x, const std::vector<int64_t>& dims, const char* op) {
  if (dims.empty()) throw hlo::HloError(std::string(op) + ": no dimensions to transform");
  for (int64_t d : dims) {
    if (d < 0 || d >= x.rank()) throw hlo::HloError(std::string(op) + ": dimension out of range");
  }
}

}  // namespace

hlo::Value lower_fft_c2c(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, FftNorm norm,
                         bool forward) {
  check_dims(x, dims, "aten::_fft_c2c");
  const double n = product(sizes_of(x, dims));
  hlo::Value v = x;
  for (const auto& group : groups_of_three(dims)) {
    v = fft_chunk(b, v, forward ? FftType::kFft : FftType::kIfft, group, sizes_of(v, group));
  }
  // IFFT divides by the number of points; ATen's inverse is unnormalized.
  return scale(b, v, norm_factor(norm, n) * (forward ? 1 : n));
}

hlo::Value lower_fft_r2c(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, FftNorm norm,
                         bool onesided) {
  check_dims(x, dims, "aten::_fft_r2c");
  if (!onesided) return lower_fft_c2c(b, convert_to(b, x, complex_of(x.dtype())), dims, norm, true);
  const double n = product(sizes_of(x, dims));
  // RFFT over the last (up to) three dims, the halved one last; the rest are
  // then complex already.
  const size_t split = dims.size() > 3 ? dims.size() - 3 : 0;
  const std::vector<int64_t> head(dims.begin(), dims.begin() + split), tail(dims.begin() + split, dims.end());
  hlo::Value v = fft_chunk(b, x, FftType::kRfft, tail, sizes_of(x, tail));
  for (const auto& group : groups_of_three(head)) v = fft_chunk(b, v, FftType::kFft, group, sizes_of(v, group));
  return scale(b, v, norm_factor(norm, n));
}

hlo::Value lower_fft_c2r(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, FftNorm norm,
                         int64_t last_dim_size) {
  check_dims(x, dims, "aten::_fft_c2r");
  if (last_dim_size < 1) throw hlo::HloError("aten::_fft_c2r: last_dim_size must be positive");
  hlo::Value v = x;
  // IRFFT reads exactly n/2 + 1 entries of the halved dim: crop or zero-pad.
  const int64_t last = dims.back(), half = last_dim_size / 2 + 1, have = v.dims()[last];
  if (have != half) {
    std::vector<int64_t> lows(v.rank(), 0), highs(v.rank(), 0), interiors(v.rank(), 0);
    highs[last] = half - have;
    v = b.pad(v, b.constant_splat(0, hlo::TensorType::scalar(v.dtype())), lows, highs, interiors);
  }
  const size_t split = dims.size() > 3 ? dims.size() - 3 : 0;
  const std::vector<int64_t> head(dims.begin(), dims.begin() + split), tail(dims.begin() + split, dims.end());
  double inverse_points = 1;
  for (const auto& group : groups_of_three(head)) {
    const std::vector<int64_t> lengths = sizes_of(v, group);
    v = fft_chunk(b, v, FftType::kIfft, group, lengths);
    inverse_points *= product(lengths);
  }
  std::vector<int64_t> lengths = sizes_of(v, tail);
  lengths.back() = last_dim_size;
  v = fft_chunk(b, v, FftType::kIrfft, tail, lengths);
  inverse_points *= product(lengths);
  // Both inverse FFTs divide by their number of points; ATen's does not.
  return scale(b, v, norm_factor(norm, inverse_points) * inverse_points);
}

}  // namespace torch_tpu::ops
