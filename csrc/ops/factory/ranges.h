// Lowerings of range factories (arange, linspace).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// [start + i * step for i in range(n)] as `out`; start and step are 0-dim
// runtime scalars of the compute type (s64 for integer outputs, f64 for f64,
// else f32, as CUDA accumulates).
hlo::Value lower_arange(hlo::Builder& b, const hlo::Value& start, const hlo::Value& step, int64_t n,
                        ElementType out);

// The compute type lower_arange expects its scalars in.
ElementType arange_compute_type(ElementType out);

}  // namespace torch_tpu::ops
