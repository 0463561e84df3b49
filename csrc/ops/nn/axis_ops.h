// Small building blocks of the pooling and resampling lowerings: host
// vectors as constants, picking entries along one axis, applying a matrix
// along one axis, and the (value, index) "max with first index" reducer.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops::axis {

// A 1-D constant.
hlo::Value i64_vector(hlo::Builder& b, const std::vector<int64_t>& v);
// A 1-D constant of float type `t` (f32 or f64) holding `v`.
hlo::Value float_vector(hlo::Builder& b, const std::vector<double>& v, ElementType t);

// x with dimension `axis` replaced by x's entries at `idx` along it (each
// in range).
hlo::Value take(hlo::Builder& b, const hlo::Value& x, int64_t axis, const std::vector<int64_t>& idx);

// The 1-D `v` (length x.dims()[axis]) broadcast to x's shape along `axis`.
hlo::Value along(hlo::Builder& b, const hlo::Value& v, const std::vector<int64_t>& dims, int64_t axis);

// The most entries (16 MB of f32) an [out, in] matrix of apply_matrix may
// have: matrix units run such a product best, but beyond it (long 1-D
// signals: 80 GB for 100k samples doubled) the resampling and pooling
// lowerings take or scatter their taps instead.
constexpr int64_t kLargestAxisMatrix = int64_t{1} << 22;

// y[.., o, ..] = sum_i m[o, i] x[.., i, ..] along `axis` (m: [out, in]);
// with `transposed`, m is [in, out] and applied as its transpose. Computed
// at the highest precision in x's type.
hlo::Value apply_matrix(hlo::Builder& b, const hlo::Value& x, int64_t axis, const hlo::Value& m, bool transposed);

// The transpose of `take`: x's entries along `axis` added into a zero
// tensor whose `axis` has `size` entries, entry o at idx[o] (each in
// range). Linear in x, where apply_matrix needs an [out, in] matrix.
hlo::Value scatter_add(hlo::Builder& b, const hlo::Value& x, int64_t axis, const std::vector<int64_t>& idx,
                       int64_t size);

// The lowest value of `t` (-inf for floats) as a 0-dim constant.
hlo::Value lowest(hlo::Builder& b, ElementType t);

// Reducer over (value, s64 index) pairs keeping PyTorch's max-pool choice:
// the larger value, the smaller index on ties, NaN over every number and
// the last NaN among NaNs.
std::vector<hlo::Value> max_with_index(hlo::Builder& b, const std::vector<hlo::Value>& args);

// Sum reducer.
std::vector<hlo::Value> add(hlo::Builder& b, const std::vector<hlo::Value>& args);

}  // namespace torch_tpu::ops::axis
