#include "ops/nn/embedding_bag.h"

#include <limits>

#include "ops/broadcast.h"
#include "ops/nn/embedding.h"
#include "ops/reduction/scan.h"

namespace torch_tpu::ops {

namespace {

constexpr ElementType kIndex = ElementType::kS64;

ElementType accumulation(ElementType t) {
  return t == ElementType::kBF16 || t == ElementType::kF16 ? ElementType::kF32 : t;
}

hlo::Value splat(hlo::Builder& b, double v, ElementType t, const std::vector<int64_t>& dims) {
  return b.constant_splat(v, hlo::TensorType(t, dims));
}

hlo::Value splat_int(hlo::Builder& b, int64_t v, const std::vector<int64_t>& dims) {
  return b.constant_splat_int(v, hlo::TensorType(kIndex, dims));
}

// [n] i1: the index is not the padding row.
hlo::Value not_padding(hlo::Builder& b, const hlo::Value& index, int64_t padding_idx) {
  const int64_t n = index.dims()[0];
  if (padding_idx < 0) return b.constant_splat_int(1, hlo::TensorType(ElementType::kPred, {n}));
  return b.compare(index, splat_int(b, padding_idx, {n}), "NE");
}

// [n] s64: the bag of position i is (number of bag starts <= i) - 1: a 1
// scattered at each start (those beyond the input land in a dropped last
// slot), then a running sum. Linear in n + bags; the [n, bags] comparison
// it replaces took 8.5 GB for 100k indices in 10k bags.
hlo::Value bag_of_positions(hlo::Builder& b, const hlo::Value& starts, int64_t n) {
  const int64_t bags = starts.dims()[0];
  hlo::Value at = b.clamp(splat_int(b, 0, {}), starts, splat_int(b, n, {}));
  hlo::Value marks = scatter_add_rows(b, splat_int(b, 0, {n + 1}), at, splat_int(b, 1, {bags}));
  hlo::Value count = b.slice(lower_cumsum(b, marks, 0, kIndex), {0}, {n}, {1});
  // Positions before the first start (offsets[0] > 0) join bag 0.
  return b.maximum(b.subtract(count, splat_int(b, 1, {n})), splat_int(b, 0, {n}));
}

hlo::Value rows_select(hlo::Builder& b, const hlo::Value& keep, const hlo::Value& rows, double otherwise) {
  const auto& dims = rows.dims();
  return b.select(b.broadcast_in_dim(keep, dims, {0}), rows, splat(b, otherwise, rows.dtype(), dims));
}

}  // namespace

EmbeddingBag lower_embedding_bag(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices,
                                 const hlo::Value& offsets, const std::optional<hlo::Value>& per_sample_weights,
                                 BagMode mode, bool include_last_offset, int64_t padding_idx) {
  const ElementType type = weight.dtype();
  const ElementType acc = accumulation(type);
  const int64_t n = indices.dims()[0];
  const int64_t width = weight.dims()[1];
  const int64_t bags = offsets.dims()[0] - (include_last_offset ? 1 : 0);
  hlo::Value index = b.convert(indices, kIndex);
  hlo::Value starts = b.convert(offsets, kIndex);
  if (include_last_offset) starts = b.slice(starts, {0}, {bags}, {1});

  EmbeddingBag r;
  if (n == 0 || bags == 0 || weight.dims()[0] == 0) {
    r.output = splat(b, 0, type, {bags, width});
    r.offset2bag = splat_int(b, 0, {n});
    r.bag_size = splat_int(b, 0, {bags});
    r.max_indices = mode == BagMode::kMax ? splat_int(b, -1, {bags, width}) : splat_int(b, 0, {bags});
    return r;
  }
  hlo::Value bag = bag_of_positions(b, starts, n);
  hlo::Value keep = not_padding(b, index, padding_idx);
  hlo::Value rows = convert_to(b, gather_rows(b, weight, index), acc);  // [n, D]
  if (per_sample_weights) {
    rows = b.multiply(rows, b.broadcast_in_dim(convert_to(b, *per_sample_weights, acc), {n, width}, {0}));
  }
  hlo::Value counts = scatter_add_rows(b, splat_int(b, 0, {bags}), bag, b.convert(keep, kIndex));
  r.offset2bag = bag;
  r.bag_size = counts;

  if (mode != BagMode::kMax) {
    hlo::Value sum = scatter_add_rows(b, splat(b, 0, acc, {bags, width}), bag, rows_select(b, keep, rows, 0));
    if (mode == BagMode::kMean) {
      hlo::Value divisor = b.convert(b.maximum(counts, splat_int(b, 1, {bags})), acc);
      sum = b.divide(sum, b.broadcast_in_dim(divisor, {bags, width}, {0}));
    }
    r.output = convert_to(b, sum, type);
    r.max_indices = splat_int(b, 0, {bags});
    return r;
  }
  // max: the largest row per bag and column, then which index gave it
  // (the first one, as CPU's loop keeps the first maximum).
  const double lowest = -std::numeric_limits<double>::infinity();
  hlo::ScatterDims dims;
  dims.update_window_dims = {1};
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  hlo::Value candidates = rows_select(b, keep, rows, lowest);
  hlo::Value best = b.scatter({splat(b, lowest, acc, {bags, width})}, bag, {candidates}, dims,
                              [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                                return std::vector<hlo::Value>{rb.maximum(a[0], a[1])};
                              })[0];
  hlo::Value best_per_row = gather_rows(b, best, bag);  // [n, D]
  hlo::Value wins = b.and_(b.compare(candidates, best_per_row, "EQ"), b.broadcast_in_dim(keep, {n, width}, {0}));
  const int64_t none = std::numeric_limits<int64_t>::max();
  hlo::Value position = b.iota(hlo::TensorType(kIndex, {n, width}), 0);
  hlo::Value first = b.scatter({splat_int(b, none, {bags, width})}, bag,
                               {b.select(wins, position, splat_int(b, none, {n, width}))}, dims,
                               [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                                 return std::vector<hlo::Value>{rb.minimum(a[0], a[1])};
                               })[0];
  hlo::Value empty = b.broadcast_in_dim(b.compare(counts, splat_int(b, 0, {bags}), "EQ"), {bags, width}, {0});
  hlo::Value winner_index = gather_rows(b, index, b.minimum(first, splat_int(b, n - 1, {bags, width})));
  r.max_indices = b.select(empty, splat_int(b, -1, {bags, width}), winner_index);
  r.output = convert_to(b, b.select(empty, splat(b, 0, acc, {bags, width}), best), type);
  return r;
}

hlo::Value lower_embedding_bag_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& indices,
                                        const hlo::Value& offset2bag, const hlo::Value& bag_size,
                                        const hlo::Value& max_indices, int64_t num_weights,
                                        bool scale_grad_by_freq, BagMode mode,
                                        const std::optional<hlo::Value>& per_sample_weights, int64_t padding_idx) {
  const ElementType type = grad.dtype();
  const ElementType acc = accumulation(type);
  const int64_t width = grad.dims()[1];
  const int64_t bags = grad.dims()[0];
  const int64_t n = indices.dims()[0];
  hlo::Value result = splat(b, 0, acc, {num_weights, width});
  if (num_weights == 0 || width == 0 || n == 0 || bags == 0) return convert_to(b, result, type);
  hlo::Value g = convert_to(b, grad, acc);
  hlo::Value index = b.convert(indices, kIndex);

  if (mode == BagMode::kMax) {
    // grad[bag, d] goes to weight[max_indices[bag, d], d]; -1 (an empty
    // bag) is out of bounds, and scatter skips it.
    hlo::Value column = b.iota(hlo::TensorType(kIndex, {bags, width, 1}), 1);
    hlo::Value row = b.reshape(b.convert(max_indices, kIndex), {bags, width, 1});
    hlo::ScatterDims dims;
    dims.inserted_window_dims = {0, 1};
    dims.scatter_dims_to_operand_dims = {0, 1};
    dims.index_vector_dim = 2;
    result = b.scatter({result}, b.concatenate({row, column}, 2), {g}, dims,
                       [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                         return std::vector<hlo::Value>{rb.add(a[0], a[1])};
                       })[0];
    return convert_to(b, result, type);
  }
  hlo::Value bag = b.convert(offset2bag, kIndex);
  hlo::Value rows = gather_rows(b, g, bag);  // [n, D]
  if (mode == BagMode::kMean) {
    hlo::Value size = b.convert(b.maximum(b.convert(bag_size, kIndex), splat_int(b, 1, {bags})), acc);
    rows = b.divide(rows, b.broadcast_in_dim(gather_rows(b, size, bag), {n, width}, {0}));
  }
  if (per_sample_weights) {
    rows = b.multiply(rows, b.broadcast_in_dim(convert_to(b, *per_sample_weights, acc), {n, width}, {0}));
  }
  rows = rows_select(b, not_padding(b, index, padding_idx), rows, 0);
  if (scale_grad_by_freq) {
    hlo::Value counts = scatter_add_rows(b, splat(b, 0, acc, {num_weights}), index, splat(b, 1, acc, {n}));
    rows = b.divide(rows, b.broadcast_in_dim(gather_rows(b, counts, index), {n, width}, {0}));
  }
  return convert_to(b, scatter_add_rows(b, result, index, rows), type);
}

hlo::Value lower_embedding_bag_per_sample_weights_backward(hlo::Builder& b, const hlo::Value& grad,
                                                           const hlo::Value& weight, const hlo::Value& indices,
                                                           const hlo::Value& offset2bag, int64_t padding_idx) {
  const ElementType acc = accumulation(grad.dtype());
  const int64_t n = indices.dims()[0];
  if (n == 0 || grad.dims()[0] == 0 || weight.dims()[0] == 0) return splat(b, 0, grad.dtype(), {n});
  hlo::Value index = b.convert(indices, kIndex);
  hlo::Value g = convert_to(b, gather_rows(b, grad, b.convert(offset2bag, kIndex)), acc);
  hlo::Value w = convert_to(b, gather_rows(b, weight, index), acc);
  hlo::Value zero = b.constant_splat(0, hlo::TensorType(acc, {}));
  hlo::Value dot = b.reduce({b.multiply(g, w)}, {zero}, {1}, [](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{rb.add(a[0], a[1])};
  })[0];
  dot = b.select(not_padding(b, index, padding_idx), dot, splat(b, 0, acc, {n}));
  return convert_to(b, dot, grad.dtype());
}

}  // namespace torch_tpu::ops
