#include "ops/indexing/advanced_index.h"

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

// Where the pieces of an indexing go: the indexed dimensions first
// ("gathered" layout: batch dims, then the other dims of self in order),
// and the permutation from that layout to PyTorch's result.
struct Layout {
  std::vector<int64_t> to_front;  // transpose of self: indexed dims first
  std::vector<int64_t> batch;     // the broadcast index shape
  std::vector<int64_t> rest;      // sizes of the dims not indexed
  std::vector<int64_t> to_result; // transpose of the gathered layout to the result
  std::vector<int64_t> gathered_dims;
  std::vector<int64_t> result_dims;
};

Layout layout_of(const std::vector<int64_t>& self, const std::vector<int64_t>& positions,
                 const std::vector<std::vector<int64_t>>& index_shapes) {
  Layout l;
  for (const auto& s : index_shapes) l.batch = broadcast_shapes(l.batch, s, "aten::index");
  std::vector<bool> indexed(self.size(), false);
  for (int64_t p : positions) {
    indexed[p] = true;
    l.to_front.push_back(p);
  }
  for (size_t d = 0; d < self.size(); ++d) {
    if (!indexed[d]) {
      l.to_front.push_back(static_cast<int64_t>(d));
      l.rest.push_back(self[d]);
    }
  }
  bool adjacent = true;
  for (size_t i = 1; i < positions.size(); ++i) adjacent = adjacent && positions[i] == positions[i - 1] + 1;
  const int64_t insert_at = adjacent && !positions.empty() ? positions[0] : 0;
  const int64_t nb = static_cast<int64_t>(l.batch.size());
  for (int64_t j = 0; j < insert_at; ++j) l.to_result.push_back(nb + j);
  for (int64_t j = 0; j < nb; ++j) l.to_result.push_back(j);
  for (int64_t j = insert_at; j < static_cast<int64_t>(l.rest.size()); ++j) l.to_result.push_back(nb + j);
  l.gathered_dims = l.batch;
  l.gathered_dims.insert(l.gathered_dims.end(), l.rest.begin(), l.rest.end());
  for (int64_t d : l.to_result) l.result_dims.push_back(l.gathered_dims[d]);
  return l;
}

std::vector<int64_t> inverse(const std::vector<int64_t>& perm) {
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[perm[i]] = static_cast<int64_t>(i);
  return inv;
}

bool identity(const std::vector<int64_t>& perm) {
  for (size_t i = 0; i < perm.size(); ++i) {
    if (perm[i] != static_cast<int64_t>(i)) return false;
  }
  return true;
}

hlo::Value transposed(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& perm) {
  return identity(perm) ? x : b.transpose(x, perm);
}

std::vector<std::vector<int64_t>> shapes_of(const std::vector<hlo::Value>& indices) {
  std::vector<std::vector<int64_t>> s;
  for (const auto& i : indices) s.push_back(i.dims());
  return s;
}

// The coordinates (batch + [k]) of the indexed elements, negatives wrapped.
hlo::Value coordinates(hlo::Builder& b, const std::vector<hlo::Value>& indices, const std::vector<int64_t>& positions,
                       const std::vector<int64_t>& self, const std::vector<int64_t>& batch) {
  std::vector<int64_t> column = batch;
  column.push_back(1);
  std::vector<hlo::Value> columns;
  for (size_t i = 0; i < indices.size(); ++i) {
    const hlo::Value wrapped = broadcast_to(b, wrap_index(b, indices[i], self[positions[i]]), batch);
    columns.push_back(b.reshape(wrapped, column));
  }
  return columns.size() == 1 ? columns[0] : b.concatenate(columns, static_cast<int64_t>(batch.size()));
}

hlo::Value violation(hlo::Builder& b, const std::vector<hlo::Value>& indices, const std::vector<int64_t>& positions,
                     const std::vector<int64_t>& self) {
  std::vector<hlo::Value> flags;
  for (size_t i = 0; i < indices.size(); ++i) flags.push_back(index_out_of_range(b, indices[i], self[positions[i]], true));
  return or_flags(b, flags);
}

bool indexes_empty_dim(const std::vector<int64_t>& self, const std::vector<int64_t>& positions) {
  for (int64_t p : positions) {
    if (self[p] == 0) return true;
  }
  return false;
}

}  // namespace

std::vector<int64_t> advanced_index_shape(const std::vector<int64_t>& self, const std::vector<int64_t>& positions,
                                          const std::vector<std::vector<int64_t>>& index_shapes) {
  return layout_of(self, positions, index_shapes).result_dims;
}

Checked lower_index(hlo::Builder& b, const hlo::Value& self, const std::vector<hlo::Value>& indices,
                    const std::vector<int64_t>& positions) {
  const Layout l = layout_of(self.dims(), positions, shapes_of(indices));
  // CPU checks the indices of the elements it reads: none for an empty result.
  const hlo::Value violated =
      element_count(l.result_dims) == 0 ? false_flag(b) : violation(b, indices, positions, self.dims());
  if (element_count(l.result_dims) == 0 || indexes_empty_dim(self.dims(), positions)) {
    return {zeros_of(b, self.dtype(), l.result_dims), violated};
  }
  const int64_t k = static_cast<int64_t>(positions.size());
  const int64_t nb = static_cast<int64_t>(l.batch.size());
  hlo::GatherDims g;
  for (size_t j = 0; j < l.rest.size(); ++j) g.offset_dims.push_back(nb + static_cast<int64_t>(j));
  for (int64_t i = 0; i < k; ++i) {
    g.collapsed_slice_dims.push_back(i);
    g.start_index_map.push_back(i);
  }
  g.index_vector_dim = nb;
  std::vector<int64_t> slice(k, 1);
  slice.insert(slice.end(), l.rest.begin(), l.rest.end());
  const hlo::Value front = transposed(b, self, l.to_front);
  const hlo::Value gathered =
      b.gather(front, coordinates(b, indices, positions, self.dims(), l.batch), g, slice);
  return {transposed(b, gathered, l.to_result), violated};
}

Checked lower_index_put(hlo::Builder& b, const hlo::Value& self, const std::vector<hlo::Value>& indices,
                        const std::vector<int64_t>& positions, const hlo::Value& values, bool accumulate) {
  const Layout l = layout_of(self.dims(), positions, shapes_of(indices));
  const hlo::Value violated =
      element_count(l.result_dims) == 0 ? false_flag(b) : violation(b, indices, positions, self.dims());
  if (element_count(l.result_dims) == 0 || element_count(self.dims()) == 0) return {self, violated};
  const int64_t k = static_cast<int64_t>(positions.size());
  const int64_t nb = static_cast<int64_t>(l.batch.size());
  hlo::ScatterDims s;
  for (size_t j = 0; j < l.rest.size(); ++j) s.update_window_dims.push_back(nb + static_cast<int64_t>(j));
  for (int64_t i = 0; i < k; ++i) {
    s.inserted_window_dims.push_back(i);
    s.scatter_dims_to_operand_dims.push_back(i);
  }
  s.index_vector_dim = nb;
  const hlo::Value updates = transposed(
      b, broadcast_to(b, convert_to(b, values, self.dtype()), l.result_dims), inverse(l.to_result));
  const hlo::Value front = transposed(b, self, l.to_front);
  const ScatterKind kind = accumulate ? ScatterKind::kSum : ScatterKind::kAssign;
  const hlo::Value written =
      b.scatter({front}, coordinates(b, indices, positions, self.dims(), l.batch), {updates}, s,
                [kind](hlo::Builder& rb, const std::vector<hlo::Value>& a) {
                  return std::vector<hlo::Value>{scatter_combine(rb, kind, a[0], a[1])};
                })[0];
  return {transposed(b, written, inverse(l.to_front)), violated};
}

}  // namespace torch_tpu::ops
