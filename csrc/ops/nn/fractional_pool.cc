#include "ops/nn/fractional_pool.h"

#include <limits>
#include <optional>

#include "ops/indexing/gather_scatter.h"
#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

// CPU computes the window starts in the input's type: 16-bit floats round
// after every operation. Here the arithmetic runs in f32 (f64 for f64) and
// `round` brings each intermediate back to the input's precision.
struct TypedArithmetic {
  hlo::Builder& b;
  ElementType type;     // the input's type
  ElementType compute;  // f32 or f64

  Value round(const Value& v) const {
    if (type == ElementType::kBF16) return b.reduce_precision(v, 8, 7);
    if (type == ElementType::kF16) return b.reduce_precision(v, 5, 10);
    return v;
  }
  Value constant(double v, const std::vector<int64_t>& dims) const {
    return round(b.constant_splat(v, TensorType(compute, dims)));
  }
};

// [N, C, out] s64: where each window of one pooled dim starts.
Value window_starts(const TypedArithmetic& a, const Value& u, int64_t in, int64_t out, int64_t k) {
  hlo::Builder& b = a.b;
  const int64_t n = u.dims()[0], c = u.dims()[1];
  const TensorType last_type(ElementType::kS64, {n, c, 1});
  const Value last = b.constant_splat_int(in - k, last_type);
  if (out == 1) return last;
  const std::vector<int64_t> dims = {n, c, out - 1};
  const Value alpha = a.round(b.divide(a.constant(static_cast<double>(in - k), dims),
                                       a.constant(static_cast<double>(out - 1), dims)));
  const Value ub = b.broadcast_in_dim(u, dims, {0, 1});
  const Value i = a.round(b.convert(b.iota(TensorType(ElementType::kS64, dims), 2), a.compute));
  const Value scaled = a.round(b.multiply(a.round(b.add(i, ub)), alpha));
  const Value offset = a.round(b.multiply(ub, alpha));
  const Value starts = b.subtract(b.convert(scaled, ElementType::kS64), b.convert(offset, ElementType::kS64));
  return b.concatenate({starts, last}, 2);
}

}  // namespace

std::pair<Value, Value> lower_fractional_max_pool(hlo::Builder& b, const Value& x, const Value& samples,
                                                  const std::vector<int64_t>& kernel,
                                                  const std::vector<int64_t>& output,
                                                  const std::vector<int64_t>& sample_column) {
  const int64_t pooled = static_cast<int64_t>(kernel.size());
  const int64_t n = x.dims()[0], c = x.dims()[1];
  std::vector<int64_t> out_dims = {n, c};
  out_dims.insert(out_dims.end(), output.begin(), output.end());
  if (element_count(out_dims) == 0) {
    return {zeros_of(b, x.dtype(), out_dims), zeros_of(b, ElementType::kS64, out_dims)};
  }
  const TypedArithmetic arithmetic{b, x.dtype(), x.dtype() == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32};

  // The flat plane index of every window element, [N, C, o_1, k_1, .., o_n, k_n].
  std::vector<int64_t> window_dims = {n, c};
  for (int64_t i = 0; i < pooled; ++i) {
    window_dims.push_back(output[i]);
    window_dims.push_back(kernel[i]);
  }
  std::optional<Value> position;
  int64_t stride = 1;
  for (int64_t i = pooled - 1; i >= 0; --i) {
    const int64_t in = x.dims()[2 + i];
    Value u = b.slice(samples, {0, 0, sample_column[i]}, {n, c, sample_column[i] + 1}, {1, 1, 1});
    u = b.convert(b.reshape(u, {n, c}), arithmetic.compute);
    const Value starts = window_starts(arithmetic, u, in, output[i], kernel[i]);
    const std::vector<int64_t> taps_dims = {n, c, output[i], kernel[i]};
    Value taps = b.add(b.broadcast_in_dim(starts, taps_dims, {0, 1, 2}),
                       b.iota(TensorType(ElementType::kS64, taps_dims), 3));
    taps = b.multiply(taps, b.constant_splat_int(stride, TensorType(ElementType::kS64, taps_dims)));
    taps = b.broadcast_in_dim(taps, window_dims, {0, 1, 2 + 2 * i, 3 + 2 * i});
    position = position ? b.add(*position, taps) : taps;
    stride *= in;
  }
  const int64_t windows = element_count(window_dims) / (n * c);
  const Value flat_x = b.reshape(x, {n * c, stride});
  const Value flat_position = b.reshape(*position, {n * c, windows});
  const Value values = b.reshape(lower_gather(b, flat_x, flat_position, 1).value, window_dims);

  std::vector<int64_t> reduce_dims;
  for (int64_t i = 0; i < pooled; ++i) reduce_dims.push_back(3 + 2 * i);
  const Value init_index =
      b.constant_splat_int(std::numeric_limits<int64_t>::max(), TensorType::scalar(ElementType::kS64));
  auto r = b.reduce({values, *position}, {axis::lowest(b, x.dtype()), init_index}, reduce_dims, axis::max_with_index);
  return {r.at(0), r.at(1)};
}

}  // namespace torch_tpu::ops
