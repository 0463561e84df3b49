// Lowerings of embedding_bag: rows of a table gathered by flat indices and
// pooled per bag (sum, mean or max), bags given by start offsets that are
// device data. The bag of each index is computed in the program (how many
// offsets are <= its position), so nothing waits for the host.
#pragma once

#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

enum class BagMode : int64_t { kSum = 0, kMean = 1, kMax = 2 };

struct EmbeddingBag {
  hlo::Value output;       // [bags, D]
  hlo::Value offset2bag;   // [n] s64: the bag of each index
  hlo::Value bag_size;     // [bags] s64: indices per bag, padding excluded
  hlo::Value max_indices;  // [bags, D] s64 (max mode: the row that won, -1 for an empty bag), else [bags]
};

// weight [N, D]; indices [n] and offsets [bags (+1 with include_last_offset)]
// of an integer type; per_sample_weights [n] (sum mode) or none;
// padding_idx < 0: no padding row.
EmbeddingBag lower_embedding_bag(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices,
                                 const hlo::Value& offsets, const std::optional<hlo::Value>& per_sample_weights,
                                 BagMode mode, bool include_last_offset, int64_t padding_idx);

// The gradient of weight [num_weights, D] from grad [bags, D].
hlo::Value lower_embedding_bag_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& indices,
                                        const hlo::Value& offset2bag, const hlo::Value& bag_size,
                                        const hlo::Value& max_indices, int64_t num_weights,
                                        bool scale_grad_by_freq, BagMode mode,
                                        const std::optional<hlo::Value>& per_sample_weights, int64_t padding_idx);

// The gradient of per_sample_weights [n]: grad[bag of i] . weight[indices[i]].
hlo::Value lower_embedding_bag_per_sample_weights_backward(hlo::Builder& b, const hlo::Value& grad,
                                                           const hlo::Value& weight, const hlo::Value& indices,
                                                           const hlo::Value& offset2bag, int64_t padding_idx);

}  // namespace torch_tpu::ops
