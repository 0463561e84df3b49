// Lowerings of the mask-driven ops: masked_fill, masked_scatter, and the
// ops whose result size is the number of true (non-zero) elements:
// nonzero, masked_select, unique, bincount. The ATen glue reads that
// count to the host first (a sync) and passes it as `count`; the lowering
// then builds the static-shape result.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

// self (broadcast with mask to `out_dims`) with `value` (0-dim) where mask is true.
hlo::Value lower_masked_fill(hlo::Builder& b, const hlo::Value& self, const hlo::Value& mask,
                             const hlo::Value& value, const std::vector<int64_t>& out_dims);

// self with the true positions of mask (broadcast to self) taking source's
// elements in order; violated when source has fewer elements than trues.
Checked lower_masked_scatter(hlo::Builder& b, const hlo::Value& self, const hlo::Value& mask,
                             const hlo::Value& source);

// The number of non-zero elements (0-dim s64).
hlo::Value lower_count_nonzero(hlo::Builder& b, const hlo::Value& x);

// The [count, rank] s64 coordinates of the non-zero elements, row-major.
// With `fill` (nonzero_static), `count` rows exactly: extra trues are
// dropped, missing rows hold `fill`.
hlo::Value lower_nonzero(hlo::Builder& b, const hlo::Value& x, int64_t count, const hlo::Value* fill = nullptr);

// The elements of self where mask (both broadcast to `dims`) is true, in order.
hlo::Value lower_masked_select(hlo::Builder& b, const hlo::Value& self, const hlo::Value& mask,
                               const std::vector<int64_t>& dims, int64_t count);

// unique, first stage: x flattened (sorted unless `consecutive`), the
// permutation that sorted it (s64), the group each sorted element belongs
// to (s64, 0-based) and the number of groups (0-dim s64).
std::vector<hlo::Value> lower_unique_groups(hlo::Builder& b, const hlo::Value& x, bool consecutive);

// unique, second stage from the first's outputs: values [count], inverse
// (`inverse_dims`), counts [count] (s64).
std::vector<hlo::Value> lower_unique_results(hlo::Builder& b, const hlo::Value& sorted, const hlo::Value& perm,
                                             const hlo::Value& group, int64_t count,
                                             const std::vector<int64_t>& inverse_dims);

// bincount, first stage: (max value or -1 when empty, any negative) as 0-dim s64 / i1.
std::vector<hlo::Value> lower_bincount_range(hlo::Builder& b, const hlo::Value& x);
// The counts (or sums of `weights`, in `out`) of each value in [0, size).
hlo::Value lower_bincount(hlo::Builder& b, const hlo::Value& x, const hlo::Value* weights, int64_t size,
                          ElementType out);

}  // namespace torch_tpu::ops
