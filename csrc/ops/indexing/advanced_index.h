// Lowerings of advanced indexing (aten::index.Tensor, index_put_): integer
// index tensors on some dimensions of self, broadcast together, as NumPy
// and PyTorch define it.
//
// The indexed dimensions (`positions`, increasing) are moved to the front,
// one gather (scatter) of whole slices of the other dimensions runs with
// the broadcast indices as coordinates, and the result dims are placed like
// PyTorch: where the first indexed dimension was when the indexed
// dimensions are adjacent, first otherwise. Boolean masks are turned into
// integer indices by the ATen glue. Negative indices wrap; out-of-range
// ones set the `violated` flag.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::ops {

// The shape self[indices] has.
std::vector<int64_t> advanced_index_shape(const std::vector<int64_t>& self, const std::vector<int64_t>& positions,
                                          const std::vector<std::vector<int64_t>>& index_shapes);

Checked lower_index(hlo::Builder& b, const hlo::Value& self, const std::vector<hlo::Value>& indices,
                    const std::vector<int64_t>& positions);

// self with self[indices] = values (+= with accumulate); `values`
// broadcasts to the indexing result's shape.
Checked lower_index_put(hlo::Builder& b, const hlo::Value& self, const std::vector<hlo::Value>& indices,
                        const std::vector<int64_t>& positions, const hlo::Value& values, bool accumulate);

}  // namespace torch_tpu::ops
