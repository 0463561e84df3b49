// Lowering of searchsorted / bucketize: for each value, the insertion
// point in a sorted sequence (the number of elements < value, or <= value
// with `right`), found by a binary search unrolled over ceil(log2(M + 1))
// steps, each a gather of the probed elements.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// sorted: [M] (shared by every value) or [..., M] with values [..., N] of
// the same leading dims. sorter (s64, sorted's shape) gives the sorting
// permutation of an unsorted `sorted`. Both sides are compared in
// `compare_type`. The result has values' shape, `out` type (s32 or s64).
hlo::Value lower_searchsorted(hlo::Builder& b, const hlo::Value& sorted, const hlo::Value& values, bool right,
                              const std::optional<hlo::Value>& sorter, ElementType compare_type,
                              ElementType out);

}  // namespace torch_tpu::ops
