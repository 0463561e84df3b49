#include "ops/nn/upsample.h"

#include <algorithm>
#include <cmath>

#include "ops/broadcast.h"
#include "ops/nn/axis_ops.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

// Output position o of an axis reads idx[t][o] with weight w[t][o].
struct Taps {
  std::vector<std::vector<int64_t>> idx;
  std::vector<std::vector<double>> w;
};

// PyTorch's scale of an axis: the inverse of a given positive scale factor,
// else in / out; with align_corners, (in - 1) / (out - 1).
template <typename T>
T axis_scale(int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  if (align_corners) return out > 1 ? static_cast<T>(in - 1) / static_cast<T>(out - 1) : T(0);
  if (scale && *scale > 0.) return static_cast<T>(1.0 / *scale);
  return static_cast<T>(in) / static_cast<T>(out);
}

template <typename T>
T source_position(T scale, int64_t o, bool align_corners, bool cubic) {
  if (align_corners) return scale * static_cast<T>(o);
  const T src = scale * (static_cast<T>(o) + T(0.5)) - T(0.5);
  return (!cubic && src < T(0)) ? T(0) : src;
}

// The floor of `pos` (kept below n) and the fraction past it, in [0, 1].
template <typename T>
std::pair<int64_t, T> floor_and_fraction(T pos, int64_t n) {
  const int64_t i = std::min(static_cast<int64_t>(std::floor(static_cast<float>(pos))), n - 1);
  const T f = std::min(std::max(pos - static_cast<T>(i), T(0)), T(1));
  return {i, f};
}

template <typename T>
T cubic_near(T x, T a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
template <typename T>
T cubic_far(T x, T a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

template <typename T>
Taps make_taps(UpsampleMode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  Taps taps;
  switch (mode) {
    case UpsampleMode::kNearest:
    case UpsampleMode::kNearestExact: {
      taps.idx.resize(1);
      taps.w.assign(1, std::vector<double>(out, 1.0));
      const float s = axis_scale<float>(in, out, false, scale);
      for (int64_t o = 0; o < out; ++o) {
        int64_t i;
        if (mode == UpsampleMode::kNearestExact) {
          i = static_cast<int64_t>(std::floor(static_cast<float>((static_cast<double>(o) + 0.5) * s)));
        } else if (out == in) {
          i = o;
        } else if (out == 2 * in) {
          i = o >> 1;
        } else {
          i = static_cast<int64_t>(std::floor(static_cast<float>(o) * s));
        }
        taps.idx[0].push_back(std::min(i, in - 1));
      }
      break;
    }
    case UpsampleMode::kLinear: {
      taps.idx.resize(2);
      taps.w.resize(2);
      const T s = axis_scale<T>(in, out, align_corners, scale);
      for (int64_t o = 0; o < out; ++o) {
        int64_t i0 = o, i1 = o;
        T l1 = 0;
        if (out != in) {
          auto [i, f] = floor_and_fraction<T>(source_position<T>(s, o, align_corners, false), in);
          i0 = i;
          i1 = i + (i < in - 1 ? 1 : 0);
          l1 = f;
        }
        taps.idx[0].push_back(i0);
        taps.idx[1].push_back(i1);
        taps.w[0].push_back(static_cast<double>(T(1) - l1));
        taps.w[1].push_back(static_cast<double>(l1));
      }
      break;
    }
    case UpsampleMode::kCubic: {
      taps.idx.resize(4);
      taps.w.resize(4);
      const T s = axis_scale<T>(in, out, align_corners, scale);
      const T a = T(-0.75);
      for (int64_t o = 0; o < out; ++o) {
        auto [i, t] = floor_and_fraction<T>(source_position<T>(s, o, align_corners, true), in);
        // The same roundings as ATen's get_cubic_upsample_coefficients.
        const T t2 = static_cast<T>(1.0 - static_cast<double>(t));
        const T c[4] = {cubic_far<T>(static_cast<T>(static_cast<double>(t) + 1.0), a), cubic_near<T>(t, a),
                        cubic_near<T>(t2, a), cubic_far<T>(static_cast<T>(static_cast<double>(t2) + 1.0), a)};
        for (int j = 0; j < 4; ++j) {
          taps.idx[j].push_back(std::max<int64_t>(std::min<int64_t>(i - 1 + j, in - 1), 0));
          taps.w[j].push_back(static_cast<double>(c[j]));
        }
      }
      break;
    }
  }
  return taps;
}

Taps axis_taps(UpsampleMode mode, ElementType dtype, int64_t in, int64_t out, bool align_corners,
               std::optional<double> scale) {
  return dtype == ElementType::kF64 ? make_taps<double>(mode, in, out, align_corners, scale)
                                    : make_taps<float>(mode, in, out, align_corners, scale);
}

// A weight vector in the compute type, rounded through the tensor's own
// type first where CPU stores weights in it (16-bit floats).
Value weights(hlo::Builder& b, const std::vector<double>& w, ElementType dtype, ElementType acc) {
  Value v = axis::float_vector(b, w, acc == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32);
  if (dtype != acc && is_floating(dtype)) v = b.convert(v, dtype);
  return convert_to(b, v, acc);
}

}  // namespace

Value lower_upsample(hlo::Builder& b, const Value& x, UpsampleMode mode, bool align_corners,
                     const std::vector<int64_t>& output, const std::vector<std::optional<double>>& scales) {
  const int64_t n = static_cast<int64_t>(output.size());
  const int64_t lead = x.rank() - n;
  const bool nearest = mode == UpsampleMode::kNearest || mode == UpsampleMode::kNearestExact;
  const ElementType acc = nearest ? x.dtype() : accumulation_type(x.dtype());
  Value y = convert_to(b, x, acc);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t axis_dim = lead + i;
    const Taps taps = axis_taps(mode, x.dtype(), x.dims()[axis_dim], output[i], align_corners, scales[i]);
    if (nearest) {
      y = axis::take(b, y, axis_dim, taps.idx[0]);
      continue;
    }
    std::optional<Value> sum;
    for (size_t t = 0; t < taps.idx.size(); ++t) {
      Value picked = axis::take(b, y, axis_dim, taps.idx[t]);
      Value term = b.multiply(picked, axis::along(b, weights(b, taps.w[t], x.dtype(), acc), picked.dims(), axis_dim));
      sum = sum ? b.add(*sum, term) : term;
    }
    y = *sum;
  }
  return convert_to(b, y, x.dtype());
}

Value lower_upsample_backward(hlo::Builder& b, const Value& grad, const std::vector<int64_t>& input_dims,
                              UpsampleMode mode, bool align_corners,
                              const std::vector<std::optional<double>>& scales) {
  const int64_t n = static_cast<int64_t>(scales.size());
  const int64_t lead = grad.rank() - n;
  const ElementType acc = accumulation_type(grad.dtype());
  if (TensorType(acc, input_dims).num_elements() == 0 || grad.type().num_elements() == 0) {
    return b.constant_splat(0, TensorType(grad.dtype(), input_dims));
  }
  Value g = convert_to(b, grad, acc);
  for (int64_t i = n - 1; i >= 0; --i) {
    const int64_t axis_dim = lead + i;
    const int64_t in = input_dims[axis_dim];
    const int64_t out = grad.dims()[axis_dim];
    const Taps taps = axis_taps(mode, grad.dtype(), in, out, align_corners, scales[i]);
    // m[o, j] = the weight output o gives input j (taps may coincide).
    const std::vector<int64_t> dims = {out, in};
    Value column = b.iota(TensorType(ElementType::kS64, dims), 1);
    Value zero = b.constant_splat(0, TensorType(acc, dims));
    std::optional<Value> m;
    for (size_t t = 0; t < taps.idx.size(); ++t) {
      Value hit = b.compare(column, b.broadcast_in_dim(axis::i64_vector(b, taps.idx[t]), dims, {0}),
                            hlo::ComparisonDirection::kEq);
      Value w = b.broadcast_in_dim(weights(b, taps.w[t], grad.dtype(), acc), dims, {0});
      Value term = b.select(hit, w, zero);
      m = m ? b.add(*m, term) : term;
    }
    g = axis::apply_matrix(b, g, axis_dim, *m, /*transposed=*/true);
  }
  return convert_to(b, g, grad.dtype());
}

}  // namespace torch_tpu::ops

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

Value splat_like(hlo::Builder& b, double v, const Value& like) {
  return b.constant_splat(v, TensorType(like.dtype(), like.dims()));
}

// PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
Value reflect(hlo::Builder& b, const Value& c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return splat_like(b, 0, c);
  const double lo = twice_low / 2.0;
  const double span = (twice_high - twice_low) / 2.0;
  Value in = b.abs(b.subtract(c, splat_like(b, lo, c)));
  Value extra = b.remainder(in, splat_like(b, span, c));
  Value flips = b.floor(b.divide(in, splat_like(b, span, c)));
  Value even = b.compare(b.remainder(flips, splat_like(b, 2, c)), splat_like(b, 0, c), hlo::ComparisonDirection::kEq);
  return b.select(even, b.add(extra, splat_like(b, lo, c)),
                  b.add(b.subtract(splat_like(b, span, c), extra), splat_like(b, lo, c)));
}

// PyTorch's grid_sampler_compute_source_index.
Value source_index(hlo::Builder& b, const Value& coord, int64_t size, int64_t padding, bool align_corners) {
  Value one = splat_like(b, 1, coord);
  Value c = align_corners
                ? b.multiply(b.divide(b.add(coord, one), splat_like(b, 2, coord)), splat_like(b, size - 1, coord))
                : b.divide(b.subtract(b.multiply(b.add(coord, one), splat_like(b, size, coord)), one),
                           splat_like(b, 2, coord));
  if (padding == 2) c = align_corners ? reflect(b, c, 0, 2 * (size - 1)) : reflect(b, c, -1, 2 * size - 1);
  if (padding != 0) c = b.minimum(b.maximum(c, splat_like(b, 0, c)), splat_like(b, size - 1, c));
  return c;
}

// The input ([N, H, W, C]) at integer positions (y, x) of [N, Ho, Wo],
// zero where outside: [N, Ho, Wo, C].
Value pick(hlo::Builder& b, const Value& nhwc, const Value& y, const Value& x) {
  const auto& d = nhwc.dims();
  const std::vector<int64_t> pos = y.dims();
  const TensorType it(ElementType::kS64, pos);
  Value yi = b.convert(y, ElementType::kS64);
  Value xi = b.convert(x, ElementType::kS64);
  Value inside = b.and_(b.and_(b.compare(yi, b.constant_splat_int(0, it), hlo::ComparisonDirection::kGe),
                               b.compare(yi, b.constant_splat_int(d[1], it), hlo::ComparisonDirection::kLt)),
                        b.and_(b.compare(xi, b.constant_splat_int(0, it), hlo::ComparisonDirection::kGe),
                               b.compare(xi, b.constant_splat_int(d[2], it), hlo::ComparisonDirection::kLt)));
  yi = b.clamp(b.constant_splat_int(0, TensorType::scalar(ElementType::kS64)), yi,
               b.constant_splat_int(d[1] - 1, TensorType::scalar(ElementType::kS64)));
  xi = b.clamp(b.constant_splat_int(0, TensorType::scalar(ElementType::kS64)), xi,
               b.constant_splat_int(d[2] - 1, TensorType::scalar(ElementType::kS64)));
  std::vector<int64_t> col = pos;
  col.push_back(1);
  Value idx = b.concatenate({b.reshape(b.iota(it, 0), col), b.reshape(yi, col), b.reshape(xi, col)}, 3);
  hlo::GatherDims g;
  g.offset_dims = {3};
  g.collapsed_slice_dims = {0, 1, 2};
  g.start_index_map = {0, 1, 2};
  g.index_vector_dim = 3;
  Value v = b.gather(nhwc, idx, g, {1, 1, 1, d[3]});
  std::vector<int64_t> out = pos;
  out.push_back(d[3]);
  Value mask = b.broadcast_in_dim(inside, out, {0, 1, 2});
  return b.select(mask, v, b.constant_splat(0, TensorType(v.dtype(), out)));
}

}  // namespace

Value lower_grid_sampler_2d(hlo::Builder& b, const Value& input, const Value& grid, int64_t interpolation,
                            int64_t padding, bool align_corners) {
  // CPU computes coordinates, weights and sums in the tensor's own type
  // (rounding 16-bit floats at every step); so does this.
  const ElementType acc = input.dtype();
  const auto& in = input.dims();
  const auto& gd = grid.dims();
  const std::vector<int64_t> out_dims = {in[0], in[1], gd[1], gd[2]};
  if (TensorType(acc, out_dims).num_elements() == 0) return b.constant_splat(0, TensorType(input.dtype(), out_dims));
  Value nhwc = b.transpose(convert_to(b, input, acc), {0, 2, 3, 1});
  Value g = convert_to(b, grid, acc);
  const std::vector<int64_t> pos = {gd[0], gd[1], gd[2]};
  Value gx = b.reshape(b.slice(g, {0, 0, 0, 0}, {gd[0], gd[1], gd[2], 1}, {1, 1, 1, 1}), pos);
  Value gy = b.reshape(b.slice(g, {0, 0, 0, 1}, {gd[0], gd[1], gd[2], 2}, {1, 1, 1, 1}), pos);
  Value ix = source_index(b, gx, in[3], padding, align_corners);
  Value iy = source_index(b, gy, in[2], padding, align_corners);
  Value r;
  if (interpolation == 1) {
    r = pick(b, nhwc, b.round_nearest_even(iy), b.round_nearest_even(ix));
  } else {
    Value one = splat_like(b, 1, ix);
    Value x0 = b.floor(ix), y0 = b.floor(iy);
    Value x1 = b.add(x0, one), y1 = b.add(y0, one);
    // PyTorch's corner weights, term by term.
    Value nw = b.multiply(b.subtract(x1, ix), b.subtract(y1, iy));
    Value ne = b.multiply(b.subtract(ix, x0), b.subtract(y1, iy));
    Value sw = b.multiply(b.subtract(x1, ix), b.subtract(iy, y0));
    Value se = b.multiply(b.subtract(ix, x0), b.subtract(iy, y0));
    std::vector<int64_t> full = pos;
    full.push_back(in[1]);
    auto term = [&](const Value& y, const Value& x, const Value& w) {
      return b.multiply(pick(b, nhwc, y, x), b.broadcast_in_dim(w, full, {0, 1, 2}));
    };
    r = b.add(b.add(b.add(term(y0, x0, nw), term(y0, x1, ne)), term(y1, x0, sw)), term(y1, x1, se));
  }
  return convert_to(b, b.transpose(r, {0, 3, 1, 2}), input.dtype());
}

}  // namespace torch_tpu::ops
