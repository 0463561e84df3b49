// Fractional max pooling (F.fractional_max_pool2d / 3d): max pooling whose
// windows start at pseudo-random offsets, one random sample per (batch,
// plane, pooled axis). The windows follow PyTorch's formula, computed in
// the input's own type as CPU computes it, so the same samples pick the
// same windows; the max and its index follow max pooling's rules.
#pragma once

#include <utility>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// x [N, C, d_1 .. d_n] pooled with `kernel` to `output` (one entry per
// pooled dim); samples [N', C, n] (N' >= N) in x's type, in [0, 1).
// sample_column[i] is the column of samples that pooled dim i reads (2-d
// pooling reads width's from column 0, height's from column 1).
// Window o of a dim of size `in` starts at int((o + u) * alpha) -
// int(u * alpha), alpha = (in - k) / (out - 1); the last one at in - k.
// Returns (values, s64 flat indices in the input plane).
std::pair<hlo::Value, hlo::Value> lower_fractional_max_pool(hlo::Builder& b, const hlo::Value& x,
                                                            const hlo::Value& samples,
                                                            const std::vector<int64_t>& kernel,
                                                            const std::vector<int64_t>& output,
                                                            const std::vector<int64_t>& sample_column);

}  // namespace torch_tpu::ops
