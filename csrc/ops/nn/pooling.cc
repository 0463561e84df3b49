#include "ops/nn/pooling.h"

#include <algorithm>
#include <limits>
#include <optional>
#include <utility>

#include "ops/broadcast.h"
#include "ops/indexing/gather_scatter.h"
#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;
using Pads = std::vector<std::pair<int64_t, int64_t>>;

struct Windowed {
  std::vector<int64_t> window, strides, dilations;
  Pads padding;
};

// reduce_window arguments over x's trailing pooled dims; the high padding
// makes exactly w.output windows. Where that padding would be negative, the
// unused tail of the input is cropped from `xs` instead.
Windowed window_args(hlo::Builder& b, std::vector<Value>& xs, const PoolWindow& w) {
  const int64_t rank = xs[0].rank();
  const int64_t n = static_cast<int64_t>(w.kernel.size());
  const int64_t lead = rank - n;
  Windowed r{std::vector<int64_t>(rank, 1), std::vector<int64_t>(rank, 1), std::vector<int64_t>(rank, 1),
             Pads(rank, {0, 0})};
  std::vector<int64_t> limits = xs[0].dims();
  bool crop = false;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = lead + i;
    const int64_t in = limits[d];
    const int64_t hi = (w.output[i] - 1) * w.stride[i] + (w.kernel[i] - 1) * w.dilation[i] + 1 - in - w.padding[i];
    r.window[d] = w.kernel[i];
    r.strides[d] = w.stride[i];
    r.dilations[d] = w.dilation[i];
    r.padding[d] = {w.padding[i], std::max<int64_t>(hi, 0)};
    if (hi < 0) {
      limits[d] = std::max<int64_t>(in + hi, 0);
      crop = true;
    }
  }
  if (crop) {
    for (Value& x : xs) x = b.slice(x, std::vector<int64_t>(rank, 0), limits, std::vector<int64_t>(rank, 1));
  }
  return r;
}

// PyTorch's average-pool divisor per output position along one dim.
std::vector<double> avg_counts(int64_t in, const PoolWindow& w, size_t i, bool count_include_pad) {
  std::vector<double> counts;
  for (int64_t o = 0; o < w.output[i]; ++o) {
    int64_t start = o * w.stride[i] - w.padding[i];
    int64_t end = std::min(start + w.kernel[i], in + w.padding[i]);
    const int64_t pool = end - start;
    start = std::max<int64_t>(start, 0);
    end = std::min(end, in);
    counts.push_back(static_cast<double>(count_include_pad ? pool : end - start));
  }
  return counts;
}

// The divisor tensor of `dims` (trailing dims pooled) in type t.
Value avg_divisor(hlo::Builder& b, const std::vector<int64_t>& dims, const std::vector<int64_t>& input_dims,
                  const PoolWindow& w, bool count_include_pad, std::optional<int64_t> divisor_override,
                  ElementType t) {
  if (divisor_override) return b.constant_splat(static_cast<double>(*divisor_override), TensorType(t, dims));
  const int64_t n = static_cast<int64_t>(w.kernel.size());
  const int64_t lead = static_cast<int64_t>(dims.size()) - n;
  const ElementType ft = t == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32;
  std::optional<Value> div;
  for (int64_t i = 0; i < n; ++i) {
    Value v = axis::along(b, axis::float_vector(b, avg_counts(input_dims[lead + i], w, i, count_include_pad), ft),
                          dims, lead + i);
    div = div ? b.multiply(*div, v) : v;
  }
  return convert_to(b, *div, t);
}

Value sum_window(hlo::Builder& b, const Value& x, const Windowed& a) {
  Value zero = b.constant_splat(0, TensorType::scalar(x.dtype()));
  return b.reduce_window({x}, {zero}, a.window, a.strides, {}, a.dilations, a.padding, axis::add).at(0);
}

Value flat_plane_index(hlo::Builder& b, const std::vector<int64_t>& dims, int64_t n) {
  const int64_t rank = static_cast<int64_t>(dims.size());
  const TensorType t(ElementType::kS64, dims);
  Value idx = b.iota(t, rank - 1);
  int64_t stride = dims[rank - 1];
  for (int64_t d = rank - 2; d >= rank - n; --d) {
    idx = b.add(idx, b.multiply(b.iota(t, d), b.constant_splat_int(stride, t)));
    stride *= dims[d];
  }
  return idx;
}

int64_t product(const std::vector<int64_t>& v, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to; ++i) p *= v[i];
  return p;
}

struct AdaptiveAxis {
  std::vector<int64_t> start, end;
  int64_t max_len = 0;
};

AdaptiveAxis adaptive_axis(int64_t in, int64_t out) {
  AdaptiveAxis a;
  for (int64_t o = 0; o < out; ++o) {
    a.start.push_back(o * in / out);
    a.end.push_back(((o + 1) * in + out - 1) / out);
    a.max_len = std::max(a.max_len, a.end.back() - a.start.back());
  }
  return a;
}

bool divisible(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] <= 0 || in[i] % out[i] != 0) return false;
  }
  return true;
}

PoolWindow uniform_window(const std::vector<int64_t>& in, const std::vector<int64_t>& out) {
  PoolWindow w;
  for (size_t i = 0; i < out.size(); ++i) {
    w.kernel.push_back(in[i] / out[i]);
    w.stride.push_back(in[i] / out[i]);
    w.padding.push_back(0);
    w.dilation.push_back(1);
    w.output.push_back(out[i]);
  }
  return w;
}

// [out, in] in type t: 1 where start[o] <= i < end[o].
Value window_indicator(hlo::Builder& b, const AdaptiveAxis& a, int64_t in, ElementType t) {
  const int64_t out = static_cast<int64_t>(a.start.size());
  const std::vector<int64_t> dims = {out, in};
  Value i = b.iota(TensorType(ElementType::kS64, dims), 1);
  Value s = b.broadcast_in_dim(axis::i64_vector(b, a.start), dims, {0});
  Value e = b.broadcast_in_dim(axis::i64_vector(b, a.end), dims, {0});
  Value inside = b.and_(b.compare(i, s, hlo::ComparisonDirection::kGe), b.compare(i, e, hlo::ComparisonDirection::kLt));
  return b.convert(inside, t);
}

// The product of the adaptive window lengths, as a tensor of `dims`.
Value adaptive_counts(hlo::Builder& b, const std::vector<AdaptiveAxis>& axes, const std::vector<int64_t>& dims,
                      ElementType t) {
  const int64_t lead = static_cast<int64_t>(dims.size() - axes.size());
  const ElementType ft = t == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32;
  std::optional<Value> div;
  for (size_t i = 0; i < axes.size(); ++i) {
    std::vector<double> c;
    for (size_t o = 0; o < axes[i].start.size(); ++o) c.push_back(static_cast<double>(axes[i].end[o] - axes[i].start[o]));
    Value v = axis::along(b, axis::float_vector(b, c, ft), dims, lead + static_cast<int64_t>(i));
    div = div ? b.multiply(*div, v) : v;
  }
  return convert_to(b, *div, t);
}

// An axis whose [out, in] window matrix would pass axis::kLargestAxisMatrix
// entries and whose windows are at most kMaxTaps long is summed tap by tap
// instead: linear in the input (100k samples pooled to a third built a
// 3.3G-entry matrix). Longer windows keep the matrix, which then stays
// under in * in / kMaxTaps entries.
constexpr int64_t kMaxTaps = 64;

bool sum_by_taps(const AdaptiveAxis& a, int64_t in) {
  return static_cast<int64_t>(a.start.size()) * in > axis::kLargestAxisMatrix && a.max_len <= kMaxTaps;
}

// Tap k of every window: its k-th input (the window's last one repeated
// past its end) and whether it is inside the window (1 or 0).
std::pair<std::vector<int64_t>, std::vector<double>> window_tap(const AdaptiveAxis& a, int64_t k) {
  std::vector<int64_t> idx;
  std::vector<double> inside;
  for (size_t o = 0; o < a.start.size(); ++o) {
    idx.push_back(std::min(a.start[o] + k, a.end[o] - 1));
    inside.push_back(a.start[o] + k < a.end[o] ? 1.0 : 0.0);
  }
  return {idx, inside};
}

// Whether tap k of each output is inside its window (window_tap's 1 / 0),
// broadcast to `dims` along `axis`.
Value in_window(hlo::Builder& b, const std::vector<double>& inside, const std::vector<int64_t>& dims, int64_t axis) {
  const Value v = axis::float_vector(b, inside, ElementType::kF32);
  return axis::along(b, b.compare(v, b.constant_splat(0, v.type()), "NE"), dims, axis);
}

// x's sums over the windows of a 0/1 matrix `m` ([out, in]; `transposed`:
// applied as its transpose) along `axis`, with IEEE sums where a window
// holds inf or NaN: a matrix product multiplies every element by every
// output's 0 or 1, and inf * 0 gave NaN to outputs whose windows miss it.
// Inputs with a non-finite element take a second product counting +inf,
// -inf and NaN per window (a stablehlo.case keeps the others at one).
Value window_matrix_sums(hlo::Builder& b, const Value& x, int64_t axis, const Value& m, bool transposed) {
  const TensorType t = x.type();
  const Value plain = axis::apply_matrix(b, x, axis, m, transposed);
  if (!is_floating(x.dtype())) return plain;
  const Value finite = b.is_finite(x);
  const Value any_non_finite = any_true(b, b.not_(finite));
  auto exact = [&](hlo::Builder& c, const std::vector<Value>&) {
    const Value zero = c.constant_splat(0, t), one = c.constant_splat(1, t);
    const double inf = std::numeric_limits<double>::infinity();
    const Value sum = axis::apply_matrix(c, c.select(finite, x, zero), axis, m, transposed);
    auto count = [&](const Value& flags) { return axis::apply_matrix(c, c.select(flags, one, zero), axis, m, transposed); };
    const Value pos = count(c.compare(x, c.constant_splat(inf, t), "EQ"));
    const Value neg = count(c.compare(x, c.constant_splat(-inf, t), "EQ"));
    const Value nan = count(c.compare(x, x, "NE"));
    const Value rzero = c.constant_splat(0, sum.type());
    const Value has_pos = c.compare(pos, rzero, "GT"), has_neg = c.compare(neg, rzero, "GT");
    Value r = c.select(has_pos, c.constant_splat(inf, sum.type()), sum);
    r = c.select(has_neg, c.constant_splat(-inf, sum.type()), r);
    const Value undefined = c.or_(c.compare(nan, rzero, "GT"), c.and_(has_pos, has_neg));
    return std::vector<Value>{c.select(undefined, c.constant_splat(std::numeric_limits<double>::quiet_NaN(), sum.type()), r)};
  };
  auto fast = [&](hlo::Builder&, const std::vector<Value>&) { return std::vector<Value>{plain}; };
  return b.case_(b.convert(any_non_finite, ElementType::kS32), {fast, exact}, {plain.type()})[0];
}

// y[.., o, ..] = sum over the window of o of x[.., i, ..] along `axis`.
Value window_sums(hlo::Builder& b, const Value& x, int64_t axis_dim, const AdaptiveAxis& a, int64_t in) {
  if (!sum_by_taps(a, in)) return window_matrix_sums(b, x, axis_dim, window_indicator(b, a, in, x.dtype()), false);
  std::optional<Value> sum;
  for (int64_t k = 0; k < a.max_len; ++k) {
    auto [idx, inside] = window_tap(a, k);
    Value picked = axis::take(b, x, axis_dim, idx);
    // A select, not a multiply by 0: the tap past a window's end repeats
    // its last element, which may be inf.
    Value term = b.select(in_window(b, inside, picked.dims(), axis_dim), picked, b.constant_splat(0, picked.type()));
    sum = sum ? b.add(*sum, term) : term;
  }
  return *sum;
}

// The transpose of window_sums: each output's gradient to every input of its window.
Value window_sums_backward(hlo::Builder& b, const Value& g, int64_t axis_dim, const AdaptiveAxis& a, int64_t in) {
  if (!sum_by_taps(a, in)) return window_matrix_sums(b, g, axis_dim, window_indicator(b, a, in, g.dtype()), true);
  std::optional<Value> sum;
  for (int64_t k = 0; k < a.max_len; ++k) {
    auto [idx, inside] = window_tap(a, k);
    Value term = b.select(in_window(b, inside, g.dims(), axis_dim), g, b.constant_splat(0, g.type()));
    Value back = axis::scatter_add(b, term, axis_dim, idx, in);
    sum = sum ? b.add(*sum, back) : back;
  }
  return *sum;
}

}  // namespace

std::pair<Value, Value> lower_max_pool(hlo::Builder& b, const Value& x, const PoolWindow& w) {
  const int64_t n = static_cast<int64_t>(w.kernel.size());
  std::vector<Value> xs = {x, flat_plane_index(b, x.dims(), n)};
  const Windowed a = window_args(b, xs, w);
  Value init_index = b.constant_splat_int(std::numeric_limits<int64_t>::max(), TensorType::scalar(ElementType::kS64));
  auto r = b.reduce_window(xs, {axis::lowest(b, x.dtype()), init_index}, a.window, a.strides, {}, a.dilations,
                           a.padding, axis::max_with_index);
  return {r.at(0), r.at(1)};
}

Value lower_max_pool_backward(hlo::Builder& b, const Value& grad, const Value& indices,
                              const std::vector<int64_t>& input_dims, int64_t pooled_dims) {
  const size_t lead = input_dims.size() - static_cast<size_t>(pooled_dims);
  const int64_t rows = product(input_dims, 0, lead);
  const int64_t plane = product(input_dims, lead, input_dims.size());
  const int64_t out_plane = product(grad.dims(), lead, grad.dims().size());
  const ElementType acc = accumulation_type(grad.dtype());
  const TensorType flat_in(acc, {rows * plane});
  if (rows * plane == 0 || rows * out_plane == 0) {
    return b.reshape(b.constant_splat(0, TensorType(grad.dtype(), {rows * plane})), input_dims);
  }
  const TensorType idx2(ElementType::kS64, {rows, out_plane});
  Value where = b.add(b.reshape(convert_to(b, indices, ElementType::kS64), {rows, out_plane}),
                      b.multiply(b.iota(idx2, 0), b.constant_splat_int(plane, idx2)));
  where = b.reshape(where, {rows * out_plane, 1});
  Value updates = b.reshape(convert_to(b, grad, acc), {rows * out_plane});
  hlo::ScatterDims sd;
  sd.inserted_window_dims = {0};
  sd.scatter_dims_to_operand_dims = {0};
  sd.index_vector_dim = 1;
  Value zeros = b.constant_splat(0, flat_in);
  Value r = b.scatter({zeros}, where, {updates}, sd, axis::add).at(0);
  return convert_to(b, b.reshape(r, input_dims), grad.dtype());
}

Value lower_avg_pool(hlo::Builder& b, const Value& x, const PoolWindow& w, bool count_include_pad,
                     std::optional<int64_t> divisor_override) {
  const ElementType acc = accumulation_type(x.dtype());
  std::vector<Value> xs = {convert_to(b, x, acc)};
  const Windowed a = window_args(b, xs, w);
  Value sum = sum_window(b, xs[0], a);
  Value div = avg_divisor(b, sum.dims(), x.dims(), w, count_include_pad, divisor_override, acc);
  return convert_to(b, b.divide(sum, div), x.dtype());
}

Value lower_avg_pool_backward(hlo::Builder& b, const Value& grad, const std::vector<int64_t>& input_dims,
                              const PoolWindow& w, bool count_include_pad, std::optional<int64_t> divisor_override) {
  const ElementType acc = accumulation_type(grad.dtype());
  Value g = convert_to(b, grad, acc);
  g = b.divide(g, avg_divisor(b, g.dims(), input_dims, w, count_include_pad, divisor_override, acc));
  const int64_t rank = g.rank();
  const int64_t n = static_cast<int64_t>(w.kernel.size());
  const int64_t lead = rank - n;
  if (TensorType(acc, input_dims).num_elements() == 0 || g.type().num_elements() == 0) {
    return b.constant_splat(0, TensorType(grad.dtype(), input_dims));
  }
  // Output o of the forward covered inputs [o s - p, o s - p + k): dilate
  // the gradient by the stride and sum windows of k around each input.
  std::vector<int64_t> lows(rank, 0), highs(rank, 0), interiors(rank, 0);
  Windowed a{std::vector<int64_t>(rank, 1), std::vector<int64_t>(rank, 1), {}, {}};
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = lead + i;
    lows[d] = w.kernel[i] - 1 - w.padding[i];
    interiors[d] = w.stride[i] - 1;
    highs[d] = input_dims[d] + w.kernel[i] - 1 - lows[d] - ((g.dims()[d] - 1) * w.stride[i] + 1);
    a.window[d] = w.kernel[i];
  }
  Value padded = b.pad(g, b.constant_splat(0, TensorType::scalar(acc)), lows, highs, interiors);
  return convert_to(b, sum_window(b, padded, a), grad.dtype());
}

Value lower_adaptive_avg_pool(hlo::Builder& b, const Value& x, const std::vector<int64_t>& output) {
  const size_t n = output.size();
  const size_t lead = static_cast<size_t>(x.rank()) - n;
  const std::vector<int64_t> in(x.dims().begin() + lead, x.dims().end());
  if (divisible(in, output)) return lower_avg_pool(b, x, uniform_window(in, output), true, std::nullopt);
  const ElementType acc = accumulation_type(x.dtype());
  Value y = convert_to(b, x, acc);
  std::vector<AdaptiveAxis> axes;
  for (size_t i = 0; i < n; ++i) {
    axes.push_back(adaptive_axis(in[i], output[i]));
    y = window_sums(b, y, static_cast<int64_t>(lead + i), axes[i], in[i]);
  }
  return convert_to(b, b.divide(y, adaptive_counts(b, axes, y.dims(), acc)), x.dtype());
}

Value lower_adaptive_avg_pool_backward(hlo::Builder& b, const Value& grad, const std::vector<int64_t>& input_dims,
                                       int64_t pooled_dims) {
  const size_t n = static_cast<size_t>(pooled_dims);
  const size_t lead = input_dims.size() - n;
  const std::vector<int64_t> in(input_dims.begin() + lead, input_dims.end());
  const std::vector<int64_t> output(grad.dims().begin() + lead, grad.dims().end());
  if (divisible(in, output)) {
    return lower_avg_pool_backward(b, grad, input_dims, uniform_window(in, output), true, std::nullopt);
  }
  const ElementType acc = accumulation_type(grad.dtype());
  Value g = convert_to(b, grad, acc);
  std::vector<AdaptiveAxis> axes;
  for (size_t i = 0; i < n; ++i) axes.push_back(adaptive_axis(in[i], output[i]));
  g = b.divide(g, adaptive_counts(b, axes, g.dims(), acc));
  for (size_t i = 0; i < n; ++i) {
    g = window_sums_backward(b, g, static_cast<int64_t>(lead + i), axes[i], in[i]);
  }
  return convert_to(b, g, grad.dtype());
}

std::pair<Value, Value> lower_adaptive_max_pool(hlo::Builder& b, const Value& x, const std::vector<int64_t>& output) {
  const int64_t n = static_cast<int64_t>(output.size());
  const int64_t lead = x.rank() - n;
  // Gather each window (padded to the longest by repeating its last
  // element, which changes neither the max nor its first index) into
  // [.., out_i, k_i, ..], then reduce over the k dims.
  Value y = x;
  std::vector<std::vector<int64_t>> taps(n);
  std::vector<int64_t> ks(n);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t in = x.dims()[lead + i];
    const AdaptiveAxis a = adaptive_axis(in, output[i]);
    ks[i] = a.max_len;
    for (int64_t o = 0; o < output[i]; ++o) {
      for (int64_t j = 0; j < a.max_len; ++j) taps[i].push_back(std::min(a.start[o] + j, a.end[o] - 1));
    }
    y = axis::take(b, y, lead + i, taps[i]);
    std::vector<int64_t> split = y.dims();
    split[lead + i] = output[i];
    split.insert(split.begin() + lead + i + 1, ks[i]);
    y = b.reshape(y, split);
  }
  const std::vector<int64_t>& dims = y.dims();
  std::optional<Value> pos;
  int64_t stride = 1;
  std::vector<int64_t> reduce_dims;
  for (int64_t i = n - 1; i >= 0; --i) {
    std::vector<int64_t> scaled = taps[i];
    for (int64_t& t : scaled) t *= stride;
    stride *= x.dims()[lead + i];
    Value v = b.reshape(axis::i64_vector(b, scaled), {output[i], ks[i]});
    v = b.broadcast_in_dim(v, dims, {lead + 2 * i, lead + 2 * i + 1});
    pos = pos ? b.add(*pos, v) : v;
    reduce_dims.insert(reduce_dims.begin(), lead + 2 * i + 1);
  }
  Value init_index = b.constant_splat_int(std::numeric_limits<int64_t>::max(), TensorType::scalar(ElementType::kS64));
  auto r = b.reduce({y, *pos}, {axis::lowest(b, x.dtype()), init_index}, reduce_dims, axis::max_with_index);
  return {r.at(0), r.at(1)};
}

}  // namespace torch_tpu::ops
