// Lowerings of the indexing ops that pick or write elements along one
// dimension (gather, scatter / scatter_add / scatter_reduce, index_select,
// index_add, index_copy, index_fill) or through the flattened tensor (take,
// put_), and the index helpers the other indexing lowerings share.
//
// Every lowering that reads indices also returns a 0-dim i1 "violated" flag:
// true when an index is out of range. The ATen glue hands it to
// defer_check(), which raises at the next sync; until then out-of-range
// reads give zeros and out-of-range writes are dropped (StableHLO skips
// scatter updates whose indices fall outside the operand).
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// A result with its out-of-range flag.
struct Checked {
  hlo::Value value;
  hlo::Value violated;  // tensor<i1>
};

// ---- shared helpers --------------------------------------------------------

int64_t element_count(const std::vector<int64_t>& dims);
hlo::Value zeros_of(hlo::Builder& b, ElementType type, const std::vector<int64_t>& dims);
// True where any element of `pred` is true (a 0-dim i1; false when empty).
hlo::Value any_true(hlo::Builder& b, const hlo::Value& pred);
// True where every element of `pred` is true (a 0-dim i1; true when empty).
hlo::Value all_true(hlo::Builder& b, const hlo::Value& pred);
hlo::Value false_flag(hlo::Builder& b);
hlo::Value or_flags(hlo::Builder& b, const std::vector<hlo::Value>& flags);
// Indices outside [-size, size) (allow_negative) or [0, size).
hlo::Value index_out_of_range(hlo::Builder& b, const hlo::Value& index, int64_t size, bool allow_negative);
// `index` as s64 with negative values wrapped by `size`.
hlo::Value wrap_index(hlo::Builder& b, const hlo::Value& index, int64_t size);
// The scatter combiner of `kind` for element type `type` (bool: or / and).
enum class ScatterKind : char { kAssign, kSum, kProd, kMean, kMax, kMin };
hlo::Value scatter_combine(hlo::Builder& b, ScatterKind kind, const hlo::Value& current,
                           const hlo::Value& update);

// ---- along one dimension, index of the operand's rank ------------------------

// torch.gather: out[..., i, ...] = self[..., index[..., i, ...], ...] along `dim`.
Checked lower_gather(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index, int64_t dim);

// torch.scatter / scatter_add / scatter_reduce: src (a tensor at least as
// large as index in every dim, or a 0-dim value) combined into self at
// index along `dim`. kMean divides by the number of contributions (floor
// division for integers); include_self=false ignores self's value wherever
// something is scattered.
Checked lower_scatter(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index, const hlo::Value& src,
                      int64_t dim, ScatterKind kind, bool include_self);

// ---- whole slices along one dimension (1-D or 0-dim index) -----------------------

// self with dimension `dim` replaced by the rows `index` (index_select).
Checked lower_index_select(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index, int64_t dim);

// index_add (kSum, source * alpha) and index_copy (kAssign): the slices of
// `source` written at `index` along `dim`.
Checked lower_index_update(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index,
                           const hlo::Value& source, int64_t dim, ScatterKind kind,
                           const std::optional<hlo::Value>& alpha);

// index_fill: the slices at `index` (negative indices wrap) set to the 0-dim `value`.
Checked lower_index_fill(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index,
                         const hlo::Value& value, int64_t dim);

// ---- through the flattened tensor -----------------------------------------------

// take: self.flatten()[index] (negative indices wrap), of index's shape.
Checked lower_take(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index);

// put_: self.flatten()[index] = source (or += with accumulate).
Checked lower_put(hlo::Builder& b, const hlo::Value& self, const hlo::Value& index, const hlo::Value& source,
                  bool accumulate);

}  // namespace torch_tpu::ops
