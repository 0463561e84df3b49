// Lowering of concatenation (torch.cat, and torch.stack through it).
#pragma once

#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// `xs` (equal rank, equal sizes outside `dim`) joined along `dim`, each
// converted to `out` first.
hlo::Value lower_cat(hlo::Builder& b, const std::vector<hlo::Value>& xs, int64_t dim, ElementType out);

}  // namespace torch_tpu::ops
