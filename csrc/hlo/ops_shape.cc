// Shape ops: broadcast, reshape, transpose, slices, concatenate, pad.
#include "hlo/attr_text.h"
#include "hlo/builder.h"
#include "hlo/checks.h"

namespace torch_tpu::hlo {

namespace {

// Dynamic start indices: one 0-dim integer tensor per operand dimension, all
// of one type (the spec requires it; mixing i32 and i64 is a common slip).
void check_start_indices(std::string_view op, const std::vector<Value>& starts,
                         int64_t rank) {
  check::count(op, "start indices", starts.size(), static_cast<size_t>(rank));
  for (const Value& s : starts) {
    check::scalar(op, "start index", s.type());
    check::dtype_in(op, "start index", s.dtype(), check::kInt);
    if (s.dtype() != starts[0].dtype()) {
      check::fail(op, "start indices mix element types " +
                          std::string(mlir_name(starts[0].dtype())) + " and " +
                          std::string(mlir_name(s.dtype())));
    }
  }
}

}  // namespace

Value Builder::broadcast_in_dim(const Value& x, std::vector<int64_t> out_dims,
                                std::vector<int64_t> broadcast_dims) {
  constexpr std::string_view op = "stablehlo.broadcast_in_dim";
  check_operand(op, x);
  TensorType result(x.dtype(), std::move(out_dims));
  check::valid_type(op, result);
  check::count(op, "broadcast_dimensions", broadcast_dims.size(),
               static_cast<size_t>(x.rank()));
  check::unique_dims(op, "broadcast_dimensions", broadcast_dims, result.rank());
  for (size_t i = 0; i < broadcast_dims.size(); ++i) {
    int64_t from = x.dims()[i];
    int64_t to = result.dims[broadcast_dims[i]];
    if (from != 1 && from != to) {
      check::fail(op, "cannot broadcast " + x.type().to_string() + " to " +
                          result.to_string() + ": dimension " +
                          std::to_string(i) + " has size " +
                          std::to_string(from) + ", target size " +
                          std::to_string(to));
    }
  }
  text::AttrList attrs;
  attrs.i64_array("broadcast_dimensions", broadcast_dims);
  return append_op1(op, {x}, result, attrs.str());
}

Value Builder::reshape(const Value& x, std::vector<int64_t> dims) {
  constexpr std::string_view op = "stablehlo.reshape";
  check_operand(op, x);
  TensorType result(x.dtype(), std::move(dims));
  check::valid_type(op, result);
  if (result.num_elements() != x.type().num_elements()) {
    check::fail(op, "cannot reshape " + x.type().to_string() + " to " +
                        result.to_string() + ": element counts differ");
  }
  return append_op1(op, {x}, result);
}

Value Builder::transpose(const Value& x, std::vector<int64_t> permutation) {
  constexpr std::string_view op = "stablehlo.transpose";
  check_operand(op, x);
  check::count(op, "permutation", permutation.size(),
               static_cast<size_t>(x.rank()));
  check::unique_dims(op, "permutation", permutation, x.rank());
  TensorType result(x.dtype(), {});
  for (int64_t p : permutation) result.dims.push_back(x.dims()[p]);
  text::AttrList attrs;
  attrs.i64_array("permutation", permutation);
  return append_op1(op, {x}, result, attrs.str());
}

Value Builder::slice(const Value& x, std::vector<int64_t> starts,
                     std::vector<int64_t> limits,
                     std::vector<int64_t> strides) {
  constexpr std::string_view op = "stablehlo.slice";
  check_operand(op, x);
  const auto rank = static_cast<size_t>(x.rank());
  check::count(op, "start_indices", starts.size(), rank);
  check::count(op, "limit_indices", limits.size(), rank);
  check::count(op, "strides", strides.size(), rank);
  check::all_positive(op, "strides", strides);
  TensorType result(x.dtype(), {});
  for (size_t i = 0; i < rank; ++i) {
    if (starts[i] < 0 || starts[i] > limits[i] || limits[i] > x.dims()[i]) {
      check::fail(op, "slice [" + std::to_string(starts[i]) + ", " +
                          std::to_string(limits[i]) + ") of dimension " +
                          std::to_string(i) + " is out of bounds for " +
                          x.type().to_string());
    }
    const int64_t extent = limits[i] - starts[i];
    result.dims.push_back(extent == 0 ? 0 : 1 + (extent - 1) / strides[i]);
  }
  text::AttrList attrs;
  attrs.i64_array("limit_indices", limits)
      .i64_array("start_indices", starts)
      .i64_array("strides", strides);
  return append_op1(op, {x}, result, attrs.str());
}

Value Builder::dynamic_slice(const Value& x, const std::vector<Value>& starts,
                             std::vector<int64_t> sizes) {
  constexpr std::string_view op = "stablehlo.dynamic_slice";
  check_operand(op, x);
  for (const Value& s : starts) check_operand(op, s);
  check_start_indices(op, starts, x.rank());
  check::count(op, "slice_sizes", sizes.size(), static_cast<size_t>(x.rank()));
  for (size_t i = 0; i < sizes.size(); ++i) {
    if (sizes[i] < 0 || sizes[i] > x.dims()[i]) {
      check::fail(op, "slice_sizes " + dims_to_string(sizes) +
                          " do not fit in " + x.type().to_string());
    }
  }
  std::vector<Value> operands;
  operands.reserve(starts.size() + 1);
  operands.push_back(x);
  operands.insert(operands.end(), starts.begin(), starts.end());
  text::AttrList attrs;
  attrs.i64_array("slice_sizes", sizes);
  return append_op1(op, operands, TensorType(x.dtype(), sizes), attrs.str());
}

Value Builder::dynamic_update_slice(const Value& x, const Value& update,
                                    const std::vector<Value>& starts) {
  constexpr std::string_view op = "stablehlo.dynamic_update_slice";
  check_operand(op, x);
  check_operand(op, update);
  for (const Value& s : starts) check_operand(op, s);
  if (update.dtype() != x.dtype() || update.rank() != x.rank()) {
    check::fail(op, "update " + update.type().to_string() +
                        " must have the operand's rank and element type (" +
                        x.type().to_string() + ")");
  }
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (update.dims()[i] > x.dims()[i]) {
      check::fail(op, "update " + update.type().to_string() +
                          " is larger than the operand " +
                          x.type().to_string());
    }
  }
  check_start_indices(op, starts, x.rank());
  if (update_reads_operand(x, update)) {
    // XLA's CPU compiler (xla-cpu-pjrt 0.0.1) can emit a fused
    // dynamic_update_slice in place while the update, fused into the same
    // loop, still reads the operand's buffer elsewhere: it then reads
    // elements it has already overwritten (b[2:5] = b[:3] + 10 read b[2]
    // after writing it, in a fused graph that also read b afterwards). A
    // select over the whole operand reads each of its elements at that
    // element's own index only, which XLA handles; it costs a pass over
    // the operand, and only such self-reading writes take it.
    const TensorType flags(ElementType::kPred, x.dims());
    Value placed = dynamic_update_slice(constant_splat_int(0, x.type()), update, starts);
    Value inside = dynamic_update_slice(constant_splat_int(0, flags),
                                        constant_splat_int(1, TensorType(ElementType::kPred, update.dims())), starts);
    return select(inside, placed, x);
  }
  std::vector<Value> operands;
  operands.reserve(starts.size() + 2);
  operands.push_back(x);
  operands.push_back(update);
  operands.insert(operands.end(), starts.begin(), starts.end());
  return append_op1(op, operands, x.type());
}

Value Builder::concatenate(const std::vector<Value>& xs, int64_t dim) {
  constexpr std::string_view op = "stablehlo.concatenate";
  if (xs.empty()) check::fail(op, "needs at least one operand");
  for (const Value& x : xs) check_operand(op, x);
  const Value& first = xs[0];
  check::dim_in_range(op, "dimension", dim, first.rank());
  TensorType result = first.type();
  result.dims[dim] = 0;
  for (const Value& x : xs) {
    bool compatible = x.dtype() == first.dtype() && x.rank() == first.rank();
    for (int64_t i = 0; compatible && i < x.rank(); ++i) {
      compatible = i == dim || x.dims()[i] == first.dims()[i];
    }
    if (!compatible) {
      check::fail(op, "operands " + first.type().to_string() + " and " +
                          x.type().to_string() +
                          " differ outside dimension " + std::to_string(dim));
    }
    result.dims[dim] += x.dims()[dim];
  }
  text::AttrList attrs;
  attrs.i64("dimension", dim);
  return append_op1(op, xs, result, attrs.str());
}

Value Builder::pad(const Value& x, const Value& pad_value,
                   std::vector<int64_t> lows, std::vector<int64_t> highs,
                   std::vector<int64_t> interiors) {
  constexpr std::string_view op = "stablehlo.pad";
  check_operand(op, x);
  check_operand(op, pad_value);
  if (pad_value.type() != TensorType::scalar(x.dtype())) {
    check::fail(op, "padding value must be " +
                        TensorType::scalar(x.dtype()).to_string() + ", got " +
                        pad_value.type().to_string());
  }
  const auto rank = static_cast<size_t>(x.rank());
  check::count(op, "edge_padding_low", lows.size(), rank);
  check::count(op, "edge_padding_high", highs.size(), rank);
  check::count(op, "interior_padding", interiors.size(), rank);
  TensorType result(x.dtype(), {});
  for (size_t i = 0; i < rank; ++i) {
    const int64_t d = x.dims()[i];
    if (interiors[i] < 0) {
      check::fail(op, "interior_padding " + dims_to_string(interiors) +
                          " must be non-negative");
    }
    const int64_t interior_total =
        d > 0 ? check::mul(op, d - 1, interiors[i]) : 0;
    const int64_t size = check::add(
        op, check::add(op, lows[i], highs[i]), check::add(op, d, interior_total));
    if (size < 0) {
      check::fail(op, "padding dimension " + std::to_string(i) + " of " +
                          x.type().to_string() + " gives negative size " +
                          std::to_string(size));
    }
    result.dims.push_back(size);
  }
  text::AttrList attrs;
  attrs.i64_array("edge_padding_high", highs)
      .i64_array("edge_padding_low", lows)
      .i64_array("interior_padding", interiors);
  return append_op1(op, {x, pad_value}, result, attrs.str());
}

}  // namespace torch_tpu::hlo
