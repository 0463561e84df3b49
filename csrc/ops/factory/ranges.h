// Lowerings of range factories (arange, linspace).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// [start + i * step for i in range(n)] as `out`; start and step are 0-dim
// runtime scalars of the compute type (s64 for integer outputs, f64 for f64,
// else f32, as CUDA accumulates).
hlo::Value lower_arange(hlo::Builder& b, const hlo::Value& start, const hlo::Value& step, int64_t n,
                        ElementType out);

// [start + i * step for i in range(n)] computed like PyTorch's linspace:
// the first half from start, the second half back from end, so both ends
// are exact. start, end are 0-dim scalars of the compute type.
hlo::Value lower_linspace(hlo::Builder& b, const hlo::Value& start, const hlo::Value& end, int64_t n,
                          ElementType out);

// An n x m identity matrix.
hlo::Value lower_eye(hlo::Builder& b, int64_t n, int64_t m, ElementType out);

// The compute type lower_arange expects its scalars in.
ElementType arange_compute_type(ElementType out);

}  // namespace torch_tpu::ops
