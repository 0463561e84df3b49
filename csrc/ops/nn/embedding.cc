#include "ops/nn/embedding.h"

#include <cmath>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

int64_t count(const std::vector<int64_t>& dims) {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

hlo::Value zeros(hlo::Builder& b, ElementType type, const std::vector<int64_t>& dims) {
  return b.constant_splat(0, hlo::TensorType(type, dims));
}

}  // namespace

hlo::Value scatter_add_rows(hlo::Builder& b, const hlo::Value& into, const hlo::Value& indices,
                            const hlo::Value& updates) {
  hlo::ScatterDims dims;
  for (int64_t d = 1; d < updates.rank(); ++d) dims.update_window_dims.push_back(d);
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  return b.scatter({into}, indices, {updates}, dims,
                   [](hlo::Builder& rb, const std::vector<hlo::Value>& args) {
                     return std::vector<hlo::Value>{rb.add(args[0], args[1])};
                   })[0];
}

hlo::Value gather_rows(hlo::Builder& b, const hlo::Value& table, const hlo::Value& indices) {
  hlo::GatherDims dims;
  const int64_t r = indices.rank();
  for (int64_t d = 1; d < table.rank(); ++d) dims.offset_dims.push_back(r + d - 1);
  dims.collapsed_slice_dims = {0};
  dims.start_index_map = {0};
  dims.index_vector_dim = r;
  std::vector<int64_t> slice = table.dims();
  slice[0] = 1;
  return b.gather(table, indices, dims, slice);
}

hlo::Value lower_embedding(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices) {
  std::vector<int64_t> out = indices.dims();
  out.push_back(weight.dims()[1]);
  // Nothing to read (and a gather slice of an empty table is invalid).
  if (count(out) == 0 || weight.dims()[0] == 0) return zeros(b, weight.dtype(), out);
  return gather_rows(b, weight, indices);
}

hlo::Value lower_embedding_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& indices,
                                    int64_t num_weights, int64_t padding_idx, bool scale_grad_by_freq) {
  const ElementType type = grad.dtype();
  const ElementType acc = type == ElementType::kBF16 || type == ElementType::kF16 ? ElementType::kF32 : type;
  const int64_t width = grad.dims().back();
  const int64_t m = count(indices.dims());
  if (num_weights == 0 || width == 0 || m == 0) return zeros(b, type, {num_weights, width});

  hlo::Value index = b.reshape(indices, {m});
  hlo::Value rows = convert_to(b, b.reshape(grad, {m, width}), acc);
  if (padding_idx >= 0) {
    hlo::Value keep = b.compare(index, b.constant_splat_int(padding_idx, index.type()), "NE");
    rows = b.select(b.broadcast_in_dim(keep, {m, width}, {0}), rows, zeros(b, acc, {m, width}));
  }
  if (scale_grad_by_freq) {
    hlo::Value ones = b.constant_splat(1, hlo::TensorType(acc, {m}));
    hlo::Value counts = scatter_add_rows(b, zeros(b, acc, {num_weights}), index, ones);
    hlo::Value per_row = gather_rows(b, counts, index);
    rows = b.divide(rows, b.broadcast_in_dim(per_row, {m, width}, {0}));
  }
  hlo::Value sum = scatter_add_rows(b, zeros(b, acc, {num_weights, width}), index, rows);
  return convert_to(b, sum, type);
}

hlo::Value lower_embedding_renorm(hlo::Builder& b, const hlo::Value& weight, const hlo::Value& indices,
                                  double max_norm, double norm_type) {
  const ElementType type = weight.dtype();
  const ElementType acc = type == ElementType::kBF16 || type == ElementType::kF16 ? ElementType::kF32 : type;
  const int64_t width = weight.dims()[1];
  const int64_t m = count(indices.dims());
  if (m == 0 || width == 0 || weight.dims()[0] == 0) return weight;
  hlo::Value index = convert_to(b, b.reshape(indices, {m}), ElementType::kS64);
  hlo::Value rows = convert_to(b, gather_rows(b, weight, index), acc);
  hlo::Value magnitude = b.abs(rows);
  auto reduce_rows = [&](const hlo::Value& v, double init, bool is_max, bool is_min) {
    hlo::Value start = b.constant_splat(init, hlo::TensorType::scalar(acc));
    return b.reduce({v}, {start}, {1}, [is_max, is_min](hlo::Builder& rb, const std::vector<hlo::Value>& args) {
      if (is_max) return std::vector<hlo::Value>{rb.maximum_in_reduction(args[0], args[1])};
      if (is_min) return std::vector<hlo::Value>{rb.minimum_in_reduction(args[0], args[1])};
      return std::vector<hlo::Value>{rb.add(args[0], args[1])};
    }).at(0);
  };
  hlo::Value norm;
  if (std::isinf(norm_type)) {
    norm = norm_type > 0 ? reduce_rows(magnitude, 0, true, false) : reduce_rows(magnitude, INFINITY, false, true);
  } else if (norm_type == 0) {
    norm = reduce_rows(b.convert(b.compare(magnitude, b.constant_splat(0, magnitude.type()), "NE"), acc), 0, false,
                       false);
  } else {
    hlo::Value p = b.constant_splat(norm_type, magnitude.type());
    hlo::Value sum = reduce_rows(b.power(magnitude, p), 0, false, false);
    norm = b.power(sum, b.constant_splat(1.0 / norm_type, sum.type()));
  }
  hlo::Value limit = b.constant_splat(max_norm, norm.type());
  hlo::Value scale = b.select(b.compare(norm, limit, "GT"),
                              b.divide(limit, b.add(norm, b.constant_splat(1e-7, norm.type()))),
                              b.constant_splat(1, norm.type()));
  hlo::Value scaled = convert_to(b, b.multiply(rows, b.broadcast_in_dim(scale, {m, width}, {0})), type);
  // Repeated indices write the same row: assignment order does not matter.
  hlo::ScatterDims dims;
  dims.update_window_dims = {1};
  dims.inserted_window_dims = {0};
  dims.scatter_dims_to_operand_dims = {0};
  dims.index_vector_dim = 1;
  return b.scatter({weight}, b.reshape(index, {m, 1}), {scaled}, dims,
                   [](hlo::Builder&, const std::vector<hlo::Value>& args) {
                     return std::vector<hlo::Value>{args[1]};
                   })[0];
}

}  // namespace torch_tpu::ops
