// Reductions (reduce, reduce_window) and sorting (sort, chlo.top_k).
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"
#include "hlo/target_quirks.h"

#include <optional>

namespace torch_tpu::hlo {

namespace {

// Inputs share one shape; each init is a 0-dim tensor of its input's dtype.
void check_inputs_and_inits(std::string_view op,
                            const std::vector<Value>& inputs,
                            const std::vector<Value>& inits) {
  if (inputs.empty()) check::fail(op, "needs at least one input");
  check::count(op, "init values", inits.size(), inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    check::same_dims(op, inputs[i].type(), inputs[0].type());
    if (inits[i].type() != TensorType::scalar(inputs[i].dtype())) {
      check::fail(op, "init value " + std::to_string(i) + " must be " +
                          TensorType::scalar(inputs[i].dtype()).to_string() +
                          ", got " + inits[i].type().to_string());
    }
  }
}

// An empty list means "all `fill`"; otherwise it needs one entry per dim.
std::vector<int64_t> per_dim_or_default(std::string_view op,
                                        std::string_view what,
                                        std::vector<int64_t> v, int64_t rank,
                                        int64_t fill) {
  if (v.empty()) return std::vector<int64_t>(static_cast<size_t>(rank), fill);
  check::count(op, what, v.size(), static_cast<size_t>(rank));
  return v;
}

// The dimensions of `type` that a reduce over `dims` keeps.
std::vector<int64_t> kept_dims_of(const TensorType& type, const std::vector<int64_t>& dims) {
  std::vector<int64_t> kept;
  for (int64_t i = 0; i < type.rank(); ++i) {
    if (!check::contains(dims, i)) kept.push_back(type.dims[i]);
  }
  return kept;
}

// A reduce that keeps the innermost dimension, with adjacent reduced
// dimensions merged and adjacent kept ones merged (dimensions of size 1
// dropped): the shape to reshape the inputs to and the dimensions to
// reduce there. Nothing for a row reduction (the innermost dimension of
// size above 1 reduced, which XLA's CPU compiler emits well when fused) or
// a reduce over fewer than two elements.
struct MergedColumns {
  std::vector<int64_t> shape;
  std::vector<int64_t> dims;
};

std::optional<MergedColumns> merged_columns(const TensorType& type, const std::vector<int64_t>& dims) {
  MergedColumns merged;
  bool last_reduced = false;
  int64_t reduced_elements = 1;
  for (int64_t i = 0; i < type.rank(); ++i) {
    const int64_t n = type.dims[i];
    if (n == 0) return std::nullopt;
    if (n == 1) continue;
    const bool reduced = check::contains(dims, i);
    if (!merged.shape.empty() && reduced == last_reduced) {
      merged.shape.back() *= n;
    } else {
      if (reduced) merged.dims.push_back(static_cast<int64_t>(merged.shape.size()));
      merged.shape.push_back(n);
    }
    if (reduced) reduced_elements *= n;
    last_reduced = reduced;
  }
  if (merged.shape.empty() || last_reduced || reduced_elements < 2) return std::nullopt;
  return merged;
}

}  // namespace

std::vector<Value> Builder::reduce(const std::vector<Value>& inputs,
                                   const std::vector<Value>& inits,
                                   std::vector<int64_t> dims,
                                   const RegionFn& body) {
  constexpr std::string_view op = "stablehlo.reduce";
  check_open(op);
  for (const Value& v : inputs) check_operand(op, v);
  for (const Value& v : inits) check_operand(op, v);
  check_inputs_and_inits(op, inputs, inits);
  check::unique_dims(op, "dimensions", dims, inputs[0].type().rank());

  const std::vector<int64_t> kept_dims = kept_dims_of(inputs[0].type(), dims);
  // The reduce XLA's CPU compiler vectorizes (TargetQuirks): one merged
  // dimension reduced, over an input it cannot fuse into the reduce (nor
  // unmerge: its simplifier folds a reshape into the reduce it feeds).
  std::vector<Value> reduced_inputs = inputs;
  std::vector<int64_t> reduced_dims = dims;
  if (target_quirks().unfused_column_reductions) {
    if (std::optional<MergedColumns> merged = merged_columns(inputs[0].type(), dims)) {
      for (Value& v : reduced_inputs) {
        if (v.type().dims != merged->shape) v = reshape(v, merged->shape);
      }
      reduced_inputs = optimization_barrier(reduced_inputs);
      reduced_dims = merged->dims;
    }
  }

  const std::vector<int64_t> result_dims = kept_dims_of(reduced_inputs[0].type(), reduced_dims);
  std::vector<TensorType> result_types;
  std::vector<ElementType> dtypes;
  for (const Value& v : reduced_inputs) {
    result_types.emplace_back(v.dtype(), result_dims);
    dtypes.push_back(v.dtype());
  }

  const int id = reserve_id();
  std::vector<std::string> regions = {build_reducer_region(op, dtypes, body)};
  std::vector<Value> operands = reduced_inputs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  text::AttrList attrs;
  attrs.i64_array("dimensions", reduced_dims);
  std::vector<Value> results = append_op(id, op, operands, result_types, attrs.str(), regions);
  if (result_dims != kept_dims) {
    for (Value& r : results) r = reshape(r, kept_dims);
  }
  return results;
}

std::vector<Value> Builder::reduce_window(
    const std::vector<Value>& inputs, const std::vector<Value>& inits,
    std::vector<int64_t> window_dims, std::vector<int64_t> strides,
    std::vector<int64_t> base_dilations, std::vector<int64_t> window_dilations,
    std::vector<std::pair<int64_t, int64_t>> padding, const RegionFn& body) {
  constexpr std::string_view op = "stablehlo.reduce_window";
  check_open(op);
  for (const Value& v : inputs) check_operand(op, v);
  for (const Value& v : inits) check_operand(op, v);
  check_inputs_and_inits(op, inputs, inits);
  const TensorType& shape = inputs[0].type();
  const int64_t rank = shape.rank();

  check::count(op, "window_dimensions", window_dims.size(),
               static_cast<size_t>(rank));
  check::all_positive(op, "window_dimensions", window_dims);
  strides = per_dim_or_default(op, "window_strides", std::move(strides), rank, 1);
  check::all_positive(op, "window_strides", strides);
  base_dilations = per_dim_or_default(op, "base_dilations",
                                      std::move(base_dilations), rank, 1);
  check::all_positive(op, "base_dilations", base_dilations);
  window_dilations = per_dim_or_default(op, "window_dilations",
                                        std::move(window_dilations), rank, 1);
  check::all_positive(op, "window_dilations", window_dilations);
  if (padding.empty()) padding.resize(static_cast<size_t>(rank), {0, 0});
  check::count(op, "padding", padding.size(), static_cast<size_t>(rank));

  std::vector<int64_t> out_dims;
  for (int64_t i = 0; i < rank; ++i) {
    const int64_t d = shape.dims[i];
    const int64_t dilated = d == 0 ? 0 : check::add(op, check::mul(op, d - 1, base_dilations[i]), 1);
    const int64_t padded = check::add(
        op, dilated, check::add(op, padding[i].first, padding[i].second));
    const int64_t window = check::add(
        op, check::mul(op, window_dims[i] - 1, window_dilations[i]), 1);
    out_dims.push_back(padded < window ? 0 : (padded - window) / strides[i] + 1);
  }
  std::vector<TensorType> result_types;
  std::vector<ElementType> dtypes;
  for (const Value& v : inputs) {
    result_types.emplace_back(v.dtype(), out_dims);
    dtypes.push_back(v.dtype());
  }

  const int id = reserve_id();
  std::vector<std::string> regions = {build_reducer_region(op, dtypes, body)};
  std::vector<Value> operands = inputs;
  operands.insert(operands.end(), inits.begin(), inits.end());
  text::AttrList attrs;
  attrs.i64_array("base_dilations", base_dilations);
  // A rank-0 window has no padding rows; leave the attribute out then.
  if (rank > 0) text::append_pairs(attrs.key("padding"), padding);
  attrs.i64_array("window_dilations", window_dilations)
      .i64_array("window_dimensions", window_dims)
      .i64_array("window_strides", strides);
  return append_op(id, op, operands, result_types, attrs.str(), regions);
}

std::vector<Value> Builder::sort(const std::vector<Value>& inputs, int64_t dim,
                                 bool is_stable, const RegionFn& comparator) {
  constexpr std::string_view op = "stablehlo.sort";
  check_open(op);
  if (inputs.empty()) check::fail(op, "needs at least one input");
  for (const Value& v : inputs) check_operand(op, v);
  for (const Value& v : inputs) check::same_dims(op, v.type(), inputs[0].type());
  check::dim_in_range(op, "dimension", dim, inputs[0].rank());

  std::vector<TensorType> arg_types;
  std::vector<TensorType> result_types;
  for (const Value& v : inputs) {
    arg_types.push_back(TensorType::scalar(v.dtype()));  // lhs
    arg_types.push_back(TensorType::scalar(v.dtype()));  // rhs
    result_types.push_back(v.type());
  }
  const int id = reserve_id();
  std::vector<TensorType> returned;
  std::vector<std::string> regions = {
      build_region(op, arg_types, comparator, &returned)};
  if (returned.size() != 1 ||
      returned[0] != TensorType::scalar(ElementType::kPred)) {
    std::string got;
    text::append_type_list(got, returned);
    check::fail(op, "comparator must return (tensor<i1>), got (" + got + ")");
  }
  text::AttrList attrs;
  attrs.i64("dimension", dim).boolean("is_stable", is_stable);
  return append_op(id, op, inputs, result_types, attrs.str(), regions);
}

std::pair<Value, Value> Builder::top_k(const Value& x, int64_t k) {
  constexpr std::string_view op = "chlo.top_k";
  check_operand(op, x);
  check::dtype_in(op, "operand", x.dtype(), check::kInt | check::kFloat);
  if (x.rank() < 1) check::fail(op, "operand must have rank >= 1");
  if (k < 0 || k > x.dims().back()) {
    check::fail(op, "k = " + std::to_string(k) + " is out of range for " +
                        x.type().to_string());
  }
  TensorType values = x.type();
  values.dims.back() = k;
  TensorType indices(ElementType::kS32, values.dims);
  text::AttrList attrs;
  attrs.i64("k", k);
  std::vector<Value> results =
      append_op(reserve_id(), op, {x}, {values, indices}, attrs.str(), {});
  return {results[0], results[1]};
}

}  // namespace torch_tpu::hlo
