// gather and scatter, validated and shaped per the StableHLO spec.
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

// Appends `name = [..]` inside a #stablehlo.<...> struct, skipping empty
// lists as StableHLO's own printer does.
void append_dims_field(std::string& out, std::string_view name,
                       const std::vector<int64_t>& dims) {
  if (dims.empty()) return;
  if (out.back() != '<') out += ", ";
  out += name;
  out += " = ";
  text::append_int_list(out, dims);
}

void append_index_vector_dim(std::string& out, int64_t dim) {
  if (out.back() != '<') out += ", ";
  out += "index_vector_dim = ";
  text::append_int(out, dim);
  out += '>';
}

void check_disjoint(std::string_view op, std::string_view what_a,
                    const std::vector<int64_t>& a, std::string_view what_b,
                    const std::vector<int64_t>& b) {
  for (int64_t d : a) {
    if (check::contains(b, d)) {
      check::fail(op, std::string(what_a) + " and " + std::string(what_b) +
                          " share dimension " + std::to_string(d));
    }
  }
}

// The checks gather and scatter share: the batching dimension pairs and the
// index vector mapping into the operand. Returns the index vector length.
int64_t check_index_mapping(std::string_view op, const TensorType& operand,
                            const TensorType& indices,
                            const std::vector<int64_t>& operand_batching,
                            std::string_view operand_batching_name,
                            const std::vector<int64_t>& indices_batching,
                            std::string_view indices_batching_name,
                            const std::vector<int64_t>& index_map,
                            std::string_view index_map_name,
                            int64_t index_vector_dim) {
  const int64_t irank = indices.rank();
  if (index_vector_dim < 0 || index_vector_dim > irank) {
    check::fail(op, "index_vector_dim " + std::to_string(index_vector_dim) +
                        " is out of range for indices " + indices.to_string());
  }
  check::sorted(op, operand_batching_name, operand_batching);
  check::unique_dims(op, operand_batching_name, operand_batching,
                     operand.rank());
  check::unique_dims(op, indices_batching_name, indices_batching, irank);
  if (check::contains(indices_batching, index_vector_dim)) {
    check::fail(op, std::string(indices_batching_name) +
                        " contains index_vector_dim");
  }
  check::count(op, indices_batching_name, indices_batching.size(),
               operand_batching.size());
  for (size_t i = 0; i < operand_batching.size(); ++i) {
    if (operand.dims[operand_batching[i]] !=
        indices.dims[indices_batching[i]]) {
      check::fail(op, "batching dimension sizes differ between operand " +
                          operand.to_string() + " and indices " +
                          indices.to_string());
    }
  }
  check::unique_dims(op, index_map_name, index_map, operand.rank());
  check_disjoint(op, index_map_name, index_map, operand_batching_name,
                 operand_batching);
  const int64_t index_vector_size =
      index_vector_dim < irank ? indices.dims[index_vector_dim] : 1;
  if (static_cast<int64_t>(index_map.size()) != index_vector_size) {
    check::fail(op, std::string(index_map_name) + " has " +
                        std::to_string(index_map.size()) +
                        " entries but the index vector has " +
                        std::to_string(index_vector_size));
  }
  return index_vector_size;
}

// Indices dims other than index_vector_dim, in order.
std::vector<int64_t> batch_dim_sizes(const TensorType& indices,
                                     int64_t index_vector_dim) {
  std::vector<int64_t> sizes;
  for (int64_t i = 0; i < indices.rank(); ++i) {
    if (i != index_vector_dim) sizes.push_back(indices.dims[i]);
  }
  return sizes;
}

}  // namespace

Value Builder::gather(const Value& operand, const Value& indices,
                      const GatherDims& dims, std::vector<int64_t> slice_sizes,
                      bool indices_are_sorted) {
  constexpr std::string_view op = "stablehlo.gather";
  check_operand(op, operand);
  check_operand(op, indices);
  check::dtype_in(op, "indices", indices.dtype(), check::kInt);
  const TensorType& otype = operand.type();
  const int64_t orank = operand.rank();

  check::count(op, "slice_sizes", slice_sizes.size(),
               static_cast<size_t>(orank));
  for (int64_t i = 0; i < orank; ++i) {
    if (slice_sizes[i] < 0 || slice_sizes[i] > otype.dims[i]) {
      check::fail(op, "slice_sizes " + dims_to_string(slice_sizes) +
                          " do not fit in " + otype.to_string());
    }
  }
  check::sorted(op, "collapsed_slice_dims", dims.collapsed_slice_dims);
  check::unique_dims(op, "collapsed_slice_dims", dims.collapsed_slice_dims,
                     orank);
  check_disjoint(op, "collapsed_slice_dims", dims.collapsed_slice_dims,
                 "operand_batching_dims", dims.operand_batching_dims);
  check_index_mapping(op, otype, indices.type(), dims.operand_batching_dims,
                      "operand_batching_dims",
                      dims.start_indices_batching_dims,
                      "start_indices_batching_dims", dims.start_index_map,
                      "start_index_map", dims.index_vector_dim);
  for (const auto* list :
       {&dims.collapsed_slice_dims, &dims.operand_batching_dims}) {
    for (int64_t d : *list) {
      // The spec also allows 0 here (for an empty operand dim), but XLA
      // aborts on it, so such gathers must be special-cased by the caller.
      if (slice_sizes[d] != 1) {
        check::fail(op, "slice size of collapsed or batching dimension " +
                            std::to_string(d) + " must be 1, got " +
                            std::to_string(slice_sizes[d]));
      }
    }
  }

  // Result: offset dims (slice dims that are kept) at offset_dims, the
  // indices' batch dims everywhere else, both in order.
  std::vector<int64_t> offset_sizes;
  for (int64_t i = 0; i < orank; ++i) {
    if (!check::contains(dims.collapsed_slice_dims, i) &&
        !check::contains(dims.operand_batching_dims, i)) {
      offset_sizes.push_back(slice_sizes[i]);
    }
  }
  check::count(op, "offset_dims", dims.offset_dims.size(), offset_sizes.size());
  const std::vector<int64_t> batch_sizes =
      batch_dim_sizes(indices.type(), dims.index_vector_dim);
  const auto result_rank =
      static_cast<int64_t>(batch_sizes.size() + offset_sizes.size());
  check::sorted(op, "offset_dims", dims.offset_dims);
  check::unique_dims(op, "offset_dims", dims.offset_dims, result_rank);
  TensorType result(operand.dtype(), {});
  size_t next_offset = 0, next_batch = 0;
  for (int64_t r = 0; r < result_rank; ++r) {
    result.dims.push_back(check::contains(dims.offset_dims, r)
                              ? offset_sizes[next_offset++]
                              : batch_sizes[next_batch++]);
  }

  text::AttrList attrs;
  std::string& numbers = attrs.key("dimension_numbers");
  numbers += "#stablehlo.gather<";
  append_dims_field(numbers, "offset_dims", dims.offset_dims);
  append_dims_field(numbers, "collapsed_slice_dims", dims.collapsed_slice_dims);
  append_dims_field(numbers, "operand_batching_dims",
                    dims.operand_batching_dims);
  append_dims_field(numbers, "start_indices_batching_dims",
                    dims.start_indices_batching_dims);
  append_dims_field(numbers, "start_index_map", dims.start_index_map);
  append_index_vector_dim(numbers, dims.index_vector_dim);
  attrs.boolean("indices_are_sorted", indices_are_sorted)
      .i64_array("slice_sizes", slice_sizes);
  return append_op1(op, {operand, indices}, result, attrs.str());
}

std::vector<Value> Builder::scatter(const std::vector<Value>& operands,
                                    const Value& indices,
                                    const std::vector<Value>& updates,
                                    const ScatterDims& dims,
                                    const RegionFn& update,
                                    bool indices_are_sorted,
                                    bool unique_indices) {
  constexpr std::string_view op = "stablehlo.scatter";
  check_open(op);
  if (operands.empty()) check::fail(op, "needs at least one operand");
  for (const Value& v : operands) check_operand(op, v);
  for (const Value& v : updates) check_operand(op, v);
  check_operand(op, indices);
  check::count(op, "updates", updates.size(), operands.size());
  check::dtype_in(op, "indices", indices.dtype(), check::kInt);
  const TensorType& otype = operands[0].type();
  const TensorType& utype = updates[0].type();
  for (size_t i = 0; i < operands.size(); ++i) {
    check::same_dims(op, operands[i].type(), otype);
    check::same_dims(op, updates[i].type(), utype);
    if (updates[i].dtype() != operands[i].dtype()) {
      check::fail(op, "update " + updates[i].type().to_string() +
                          " and operand " + operands[i].type().to_string() +
                          " differ in element type");
    }
  }
  const int64_t orank = otype.rank();
  const int64_t urank = utype.rank();
  // Valid per the spec, but XLA's scatter expansion fails on it.
  if (orank == 0) {
    check::fail(op, "operands must have rank >= 1; reshape a 0-dim operand "
                    "to [1] first");
  }

  check::sorted(op, "update_window_dims", dims.update_window_dims);
  check::unique_dims(op, "update_window_dims", dims.update_window_dims, urank);
  check::sorted(op, "inserted_window_dims", dims.inserted_window_dims);
  check::unique_dims(op, "inserted_window_dims", dims.inserted_window_dims,
                     orank);
  check_disjoint(op, "inserted_window_dims", dims.inserted_window_dims,
                 "input_batching_dims", dims.input_batching_dims);
  check_index_mapping(op, otype, indices.type(), dims.input_batching_dims,
                      "input_batching_dims",
                      dims.scatter_indices_batching_dims,
                      "scatter_indices_batching_dims",
                      dims.scatter_dims_to_operand_dims,
                      "scatter_dims_to_operand_dims", dims.index_vector_dim);
  if (dims.update_window_dims.size() + dims.inserted_window_dims.size() +
          dims.input_batching_dims.size() !=
      static_cast<size_t>(orank)) {
    check::fail(op,
                "update_window_dims, inserted_window_dims and "
                "input_batching_dims must together cover the operand's " +
                    std::to_string(orank) + " dimensions");
  }

  // Updates = the indices' batch dims (in order) interleaved with window
  // dims at update_window_dims, each window no larger than its operand dim.
  const std::vector<int64_t> batch_sizes =
      batch_dim_sizes(indices.type(), dims.index_vector_dim);
  if (static_cast<size_t>(urank) !=
      dims.update_window_dims.size() + batch_sizes.size()) {
    check::fail(op, "updates " + utype.to_string() + " should have rank " +
                        std::to_string(dims.update_window_dims.size() +
                                       batch_sizes.size()));
  }
  std::vector<int64_t> window_operand_dims;
  for (int64_t i = 0; i < orank; ++i) {
    if (!check::contains(dims.inserted_window_dims, i) &&
        !check::contains(dims.input_batching_dims, i)) {
      window_operand_dims.push_back(i);
    }
  }
  size_t next_window = 0, next_batch = 0;
  for (int64_t u = 0; u < urank; ++u) {
    if (check::contains(dims.update_window_dims, u)) {
      int64_t operand_dim = window_operand_dims[next_window++];
      if (utype.dims[u] > otype.dims[operand_dim]) {
        check::fail(op, "update window dimension " + std::to_string(u) +
                            " of " + utype.to_string() +
                            " is larger than the operand " + otype.to_string());
      }
    } else if (utype.dims[u] != batch_sizes[next_batch++]) {
      check::fail(op, "update scatter dimensions of " + utype.to_string() +
                          " do not match indices " +
                          indices.type().to_string());
    }
  }

  const int id = reserve_id();
  std::vector<ElementType> dtypes;
  for (const Value& v : operands) dtypes.push_back(v.dtype());
  std::vector<std::string> regions = {
      build_reducer_region(op, dtypes, update)};

  text::AttrList attrs;
  attrs.boolean("indices_are_sorted", indices_are_sorted);
  std::string& numbers = attrs.key("scatter_dimension_numbers");
  numbers += "#stablehlo.scatter<";
  append_dims_field(numbers, "update_window_dims", dims.update_window_dims);
  append_dims_field(numbers, "inserted_window_dims", dims.inserted_window_dims);
  append_dims_field(numbers, "input_batching_dims", dims.input_batching_dims);
  append_dims_field(numbers, "scatter_indices_batching_dims",
                    dims.scatter_indices_batching_dims);
  append_dims_field(numbers, "scatter_dims_to_operand_dims",
                    dims.scatter_dims_to_operand_dims);
  append_index_vector_dim(numbers, dims.index_vector_dim);
  attrs.boolean("unique_indices", unique_indices);

  std::vector<Value> all_operands = operands;
  all_operands.push_back(indices);
  all_operands.insert(all_operands.end(), updates.begin(), updates.end());
  std::vector<TensorType> result_types;
  for (const Value& v : operands) result_types.push_back(v.type());
  return append_op(id, op, all_operands, result_types, attrs.str(), regions);
}

}  // namespace torch_tpu::hlo
