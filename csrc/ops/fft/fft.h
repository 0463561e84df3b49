// Lowerings of ATen's three FFT primitives (_fft_r2c, _fft_c2r, _fft_c2c),
// which every torch.fft function and stft reach. stablehlo.fft transforms at
// most the three trailing dimensions, so the requested dimensions are moved
// to the end in groups of up to three (an n-dimensional DFT is separable).
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// ATen's normalization codes: none, 1/sqrt(n), 1/n, where n is the number
// of points of the signal over all transformed dims.
enum class FftNorm : int64_t { kNone = 0, kByRootN = 1, kByN = 2 };

// Real to complex over `dims` (distinct, non-negative); the last of `dims`
// keeps only n/2 + 1 entries when `onesided`.
hlo::Value lower_fft_r2c(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, FftNorm norm,
                         bool onesided);

// Complex (one-sided, Hermitian) to real over `dims`; the last of `dims`
// becomes `last_dim_size` long.
hlo::Value lower_fft_c2r(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, FftNorm norm,
                         int64_t last_dim_size);

// Complex to complex over `dims`: e^{-i...} when `forward`, e^{+i...}
// otherwise; both unnormalized before `norm` is applied.
hlo::Value lower_fft_c2c(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, FftNorm norm,
                         bool forward);

}  // namespace torch_tpu::ops
