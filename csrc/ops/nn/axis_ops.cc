#include "ops/nn/axis_ops.h"

#include <limits>

namespace torch_tpu::ops::axis {

using hlo::TensorType;
using hlo::Value;

Value i64_vector(hlo::Builder& b, const std::vector<int64_t>& v) {
  return b.constant_bytes(v.data(), v.size() * sizeof(int64_t),
                          TensorType(ElementType::kS64, {static_cast<int64_t>(v.size())}));
}

Value float_vector(hlo::Builder& b, const std::vector<double>& v, ElementType t) {
  const TensorType type(t, {static_cast<int64_t>(v.size())});
  if (t == ElementType::kF64) return b.constant_bytes(v.data(), v.size() * sizeof(double), type);
  std::vector<float> f(v.begin(), v.end());
  return b.constant_bytes(f.data(), f.size() * sizeof(float), TensorType(ElementType::kF32, type.dims));
}

Value take(hlo::Builder& b, const Value& x, int64_t axis, const std::vector<int64_t>& idx) {
  std::vector<int64_t> out = x.dims();
  out[axis] = static_cast<int64_t>(idx.size());
  const TensorType out_type(x.dtype(), out);
  if (out_type.num_elements() == 0) return b.constant_splat_int(0, out_type);
  hlo::GatherDims g;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != axis) g.offset_dims.push_back(d);
  }
  g.collapsed_slice_dims = {axis};
  g.start_index_map = {axis};
  g.index_vector_dim = 1;
  std::vector<int64_t> sizes = x.dims();
  sizes[axis] = 1;
  return b.gather(x, i64_vector(b, idx), g, sizes, /*indices_are_sorted=*/false);
}

Value along(hlo::Builder& b, const Value& v, const std::vector<int64_t>& dims, int64_t axis) {
  return b.broadcast_in_dim(v, dims, {axis});
}

Value apply_matrix(hlo::Builder& b, const Value& x, int64_t axis, const Value& m, bool transposed) {
  hlo::DotDims d;
  d.lhs_contracting_dims = {axis};
  d.rhs_contracting_dims = {transposed ? 0 : 1};
  // Result: x's other dims, then the matrix's free dim; move it back.
  Value y = b.dot_general(x, m, d, hlo::Precision::kHighest);
  std::vector<int64_t> perm;
  for (int64_t i = 0; i < x.rank() - 1; ++i) {
    if (i == axis) perm.push_back(x.rank() - 1);
    perm.push_back(i);
  }
  if (axis == x.rank() - 1) perm.push_back(x.rank() - 1);
  return b.transpose(y, perm);
}

Value scatter_add(hlo::Builder& b, const Value& x, int64_t axis, const std::vector<int64_t>& idx, int64_t size) {
  std::vector<int64_t> dims = x.dims();
  dims[axis] = size;
  hlo::ScatterDims d;
  for (int64_t i = 0; i < x.rank(); ++i) {
    if (i != axis) d.update_window_dims.push_back(i);
  }
  d.inserted_window_dims = {axis};
  d.scatter_dims_to_operand_dims = {axis};
  d.index_vector_dim = 1;
  const Value index = b.reshape(i64_vector(b, idx), {static_cast<int64_t>(idx.size()), 1});
  return b.scatter({b.constant_splat(0, TensorType(x.dtype(), dims))}, index, {x}, d, add)[0];
}

Value lowest(hlo::Builder& b, ElementType t) {
  const TensorType s = TensorType::scalar(t);
  if (is_floating(t)) return b.constant_splat(-std::numeric_limits<double>::infinity(), s);
  if (is_unsigned(t) || t == ElementType::kPred) return b.constant_splat_int(0, s);
  switch (t) {
    case ElementType::kS8: return b.constant_splat_int(std::numeric_limits<int8_t>::min(), s);
    case ElementType::kS16: return b.constant_splat_int(std::numeric_limits<int16_t>::min(), s);
    case ElementType::kS32: return b.constant_splat_int(std::numeric_limits<int32_t>::min(), s);
    default: return b.constant_splat_int(std::numeric_limits<int64_t>::min(), s);
  }
}

std::vector<Value> max_with_index(hlo::Builder& b, const std::vector<Value>& args) {
  const Value& av = args[0];
  const Value& ai = args[1];
  const Value& bv = args[2];
  const Value& bi = args[3];
  Value first = b.compare(ai, bi, hlo::ComparisonDirection::kLt);
  Value take_a = b.or_(b.compare(av, bv, hlo::ComparisonDirection::kGt),
                       b.and_(b.compare(av, bv, hlo::ComparisonDirection::kEq), first));
  if (is_floating(av.dtype())) {
    Value a_nan = b.compare(av, av, hlo::ComparisonDirection::kNe);
    Value b_nan = b.compare(bv, bv, hlo::ComparisonDirection::kNe);
    Value both = b.and_(a_nan, b_nan);
    Value either = b.or_(a_nan, b_nan);
    // Both NaN: the later one; one NaN: that one; else by value.
    take_a = b.select(both, b.not_(first), b.select(either, a_nan, take_a));
  }
  return {b.select(take_a, av, bv), b.select(take_a, ai, bi)};
}

std::vector<Value> add(hlo::Builder& b, const std::vector<Value>& args) { return {b.add(args[0], args[1])}; }

}  // namespace torch_tpu::ops::axis
