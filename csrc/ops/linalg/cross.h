// Lowering of the 3-vector cross product (torch.linalg.cross / torch.cross).
#pragma once

#include <cstdint>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// a x b along `dim` (size 3 in both), broadcasting the other dimensions,
// computed in `out`.
hlo::Value lower_cross(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, int64_t dim, ElementType out);

}  // namespace torch_tpu::ops
