// Lowerings of the reductions: sum / nansum / prod, mean, amax / amin,
// max / min with their indices, argmax / argmin, all / any, var / std,
// logsumexp and hash_tensor.
//
// Every lowering takes `dims`, the reduced dimensions already normalized by
// the ATen glue (wrapped, sorted, unique; empty for a 0-dim input), and
// `keepdim`, which keeps each reduced dimension with size 1. Half-precision
// floats accumulate in f32 and are rounded once at the end, as CPU and CUDA
// do; NaN propagates through max / min like on CPU.
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "hlo/builder.h"
#include "ops/broadcast.h"

namespace torch_tpu::ops {

// kXor: hash_tensor's mode 0, the exclusive or of the elements as 64-bit
// patterns (floats widened to f64, signed integers and bool to s64,
// unsigned ones to u64, as CPU's xor_sum widens them), a u64 result.
enum class ReduceKind : char { kSum, kNanSum, kProd, kMax, kMin, kAll, kAny, kXor };


// `x` converted to `acc`, reduced with `kind` over `dims`, converted to
// `out`. kAll / kAny ignore `acc` (they reduce truth values); kMax / kMin
// reduce in x's own type. A reduction over an empty dimension gives the
// identity (0, 1, true, false; the lowest / highest value for max / min).
hlo::Value lower_reduce(hlo::Builder& b, const hlo::Value& x, ReduceKind kind,
                        const std::vector<int64_t>& dims, bool keepdim, ElementType acc, ElementType out);

// The mean in `out` (a float or complex type): an empty reduction is NaN.
hlo::Value lower_mean(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, bool keepdim,
                      ElementType out);

// The largest (is_max) or smallest value along `dim` and the s64 index of
// its first occurrence; a NaN wins over every number, the first NaN over
// later ones. `dim` must have a non-zero size unless the result is empty.
std::pair<hlo::Value, hlo::Value> lower_max_min_dim(hlo::Builder& b, const hlo::Value& x, int64_t dim,
                                                    bool keepdim, bool is_max);

// argmax / argmin (s64); without a dim, over the flattened input (a 0-dim
// result, or all ones with keepdim).
hlo::Value lower_arg_max_min(hlo::Builder& b, const hlo::Value& x, std::optional<int64_t> dim, bool keepdim,
                             bool is_max);

// Variance with divisor max(0, N - correction) (N: the number of reduced
// elements), or its square root. `out` is a real float type (the real
// counterpart for a complex input). With `mean`, also returns the mean in
// x's own type (var_mean / std_mean).
std::pair<hlo::Value, std::optional<hlo::Value>> lower_var(hlo::Builder& b, const hlo::Value& x,
                                                           const std::vector<int64_t>& dims, double correction,
                                                           bool keepdim, bool take_sqrt, bool with_mean,
                                                           ElementType out);

// log(sum(exp(x))) over `dims`, stabilized by the maximum (an infinite
// maximum is replaced by 0, as on CPU); computed in `out`'s accumulation type.
hlo::Value lower_logsumexp(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims, bool keepdim,
                           ElementType out);

// The shape of `x` reduced over `dims`.
std::vector<int64_t> reduced_shape(const std::vector<int64_t>& shape, const std::vector<int64_t>& dims,
                                   bool keepdim);

// A reduced value (dims removed) reshaped to the keepdim shape when asked.
hlo::Value restore_reduced_dims(hlo::Builder& b, const hlo::Value& reduced, const std::vector<int64_t>& shape,
                                const std::vector<int64_t>& dims, bool keepdim);

// A value of the keepdim shape broadcast back to `shape`.
hlo::Value expand_kept(hlo::Builder& b, const hlo::Value& kept, const std::vector<int64_t>& shape);

// A reduced value (`dims` removed) broadcast back to `shape`.
hlo::Value broadcast_reduced(hlo::Builder& b, const hlo::Value& reduced, const std::vector<int64_t>& shape,
                             const std::vector<int64_t>& dims);

}  // namespace torch_tpu::ops
