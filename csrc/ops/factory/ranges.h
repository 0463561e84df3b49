// Lowerings of range factories (arange, linspace).
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// [start + i * step for i in range(n)] as `out`; start and step are 0-dim
// runtime scalars of the compute type (s64 for integer outputs, f64 for f64,
// else f32, as CUDA accumulates).
hlo::Value lower_arange(hlo::Builder& b, const hlo::Value& start, const hlo::Value& step, int64_t n,
                        ElementType out);

// n points from start to end computed as CPU's linspace does: the first
// half as start + step * i, the second half as end - step * (n - 1 - i), so
// both ends are exact. start, end and step are 0-dim runtime scalars of the
// compute type (f64 for integer outputs, whose values truncate), step
// computed on the host as CPU computes it (a division by the constant
// n - 1 in the program may become a multiplication by its reciprocal).
hlo::Value lower_linspace(hlo::Builder& b, const hlo::Value& start, const hlo::Value& end, const hlo::Value& step,
                          int64_t n, ElementType out);

// base ** exponents (f64, the host's linspace), computed in f64 and rounded
// (truncated for integers) once, as CPU's logspace does.
hlo::Value lower_logspace(hlo::Builder& b, const hlo::Value& exponents, const hlo::Value& base, ElementType out);

// An n x m identity matrix.
hlo::Value lower_eye(hlo::Builder& b, int64_t n, int64_t m, ElementType out);

// The compute type lower_arange expects its scalars in.
ElementType arange_compute_type(ElementType out);

}  // namespace torch_tpu::ops
