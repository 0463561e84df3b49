// Lowerings of triu / tril: the elements above (or below) a diagonal of the
// last two dimensions kept, the rest zero.
#pragma once

#include <cstdint>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// `x` (rank >= 2) with every element (.., i, j) where j - i < diagonal
// (upper) or j - i > diagonal (lower) set to zero.
hlo::Value lower_triangular(hlo::Builder& b, const hlo::Value& x, int64_t diagonal, bool upper);

}  // namespace torch_tpu::ops
