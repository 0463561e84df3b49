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

// PyTorch's _compute_weights_aa: the filter (triangle, or Keys' cubic with
// a = -0.5) stretched by the scale when downsampling, over the inputs
// within its support, normalized to sum 1. Outputs with fewer taps than the
// widest one get zero-weight taps on input 0.
template <typename T>
Taps antialias_taps(bool cubic, int64_t in, int64_t out, bool align_corners, std::optional<double> scale) {
  const T s = axis_scale<T>(in, out, align_corners, scale);
  const T half_width = cubic ? T(2) : T(1);
  const T support = s >= T(1) ? half_width * s : half_width;
  const int64_t width = static_cast<int64_t>(std::ceil(static_cast<double>(support))) * 2 + 1;
  const T inverse = s >= T(1) ? T(1) / s : T(1);
  auto filter = [cubic](T x) {
    x = std::abs(x);
    if (!cubic) return x < T(1) ? T(1) - x : T(0);
    const T a = T(-0.5);
    if (x < T(1)) return cubic_near<T>(x, a);
    if (x < T(2)) return cubic_far<T>(x, a);
    return T(0);
  };
  Taps taps;
  taps.idx.assign(width, std::vector<int64_t>(out, 0));
  taps.w.assign(width, std::vector<double>(out, 0.0));
  for (int64_t o = 0; o < out; ++o) {
    const T center = s * (static_cast<T>(o) + T(0.5));
    const int64_t first = std::max<int64_t>(static_cast<int64_t>(center - support + T(0.5)), 0);
    const int64_t count = std::clamp<int64_t>(
        std::min<int64_t>(static_cast<int64_t>(center + support + T(0.5)), in) - first, 0, width);
    std::vector<T> w(count);
    T total = 0;
    for (int64_t j = 0; j < count; ++j) {
      w[j] = filter((static_cast<T>(j + first) - center + T(0.5)) * inverse);
      total += w[j];
    }
    for (int64_t j = 0; j < count; ++j) {
      taps.idx[j][o] = first + j;
      taps.w[j][o] = static_cast<double>(total != T(0) ? w[j] / total : w[j]);
    }
  }
  return taps;
}

// `nearest_shortcuts`: nearest's source index is o for out == in and o / 2
// for out == 2 in, whatever the scale given. CPU's 2-D forward kernel and
// its backward kernels take these shortcuts; its 1-D and 3-D forward
// kernels (and CUDA) compute floor(o * scale), which differs when a
// scale_factor such as 1.05 gives out == in.
template <typename T>
Taps make_taps(UpsampleMode mode, int64_t in, int64_t out, bool align_corners, std::optional<double> scale,
               bool nearest_shortcuts) {
  Taps taps;
  switch (mode) {
    case UpsampleMode::kLinearAntialias:
    case UpsampleMode::kCubicAntialias:
      return antialias_taps<T>(mode == UpsampleMode::kCubicAntialias, in, out, align_corners, scale);
    case UpsampleMode::kNearest:
    case UpsampleMode::kNearestExact: {
      taps.idx.resize(1);
      taps.w.assign(1, std::vector<double>(out, 1.0));
      const float s = axis_scale<float>(in, out, false, scale);
      for (int64_t o = 0; o < out; ++o) {
        int64_t i;
        if (mode == UpsampleMode::kNearestExact) {
          i = static_cast<int64_t>(std::floor(static_cast<float>((static_cast<double>(o) + 0.5) * s)));
        } else if (nearest_shortcuts && out == in) {
          i = o;
        } else if (nearest_shortcuts && out == 2 * in) {
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
               std::optional<double> scale, bool nearest_shortcuts = true) {
  return dtype == ElementType::kF64 ? make_taps<double>(mode, in, out, align_corners, scale, nearest_shortcuts)
                                    : make_taps<float>(mode, in, out, align_corners, scale, nearest_shortcuts);
}

// A weight vector in the compute type, rounded through the tensor's own
// type first where CPU stores weights in it: bicubic's, of 16-bit floats.
// CPU keeps linear weights in f32 for bilinear; for linear and trilinear it
// rounds them, which loses accuracy, so they stay f32 here too.
Value weights(hlo::Builder& b, const std::vector<double>& w, UpsampleMode mode, ElementType dtype, ElementType acc) {
  Value v = axis::float_vector(b, w, acc == ElementType::kF64 ? ElementType::kF64 : ElementType::kF32);
  if (mode == UpsampleMode::kCubic && dtype != acc && is_floating(dtype)) v = b.convert(v, dtype);
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
    const Taps taps = axis_taps(mode, x.dtype(), x.dims()[axis_dim], output[i], align_corners, scales[i],
                                /*nearest_shortcuts=*/n == 2);
    if (nearest) {
      y = axis::take(b, y, axis_dim, taps.idx[0]);
      continue;
    }
    const bool antialias = mode == UpsampleMode::kLinearAntialias || mode == UpsampleMode::kCubicAntialias;
    std::optional<Value> sum;
    for (size_t t = 0; t < taps.idx.size(); ++t) {
      Value picked = axis::take(b, y, axis_dim, taps.idx[t]);
      const Value w = weights(b, taps.w[t], mode, x.dtype(), acc);
      Value term = b.multiply(picked, axis::along(b, w, picked.dims(), axis_dim));
      if (antialias) {
        // Outputs with a narrower support than the widest have zero-weight
        // taps that CPU never reads: an inf there must not give inf * 0.
        const Value used = b.compare(w, b.constant_splat(0, w.type()), "NE");
        term = b.select(axis::along(b, used, picked.dims(), axis_dim), term, b.constant_splat(0, term.type()));
      }
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
    if (out * in > axis::kLargestAxisMatrix) {
      // Each tap's weighted gradient added back where it was taken from.
      std::optional<Value> sum;
      for (size_t t = 0; t < taps.idx.size(); ++t) {
        Value term = b.multiply(g, axis::along(b, weights(b, taps.w[t], mode, grad.dtype(), acc), g.dims(), axis_dim));
        Value back = axis::scatter_add(b, term, axis_dim, taps.idx[t], in);
        sum = sum ? b.add(*sum, back) : back;
      }
      g = *sum;
      continue;
    }
    // m[o, j] = the weight output o gives input j (taps may coincide).
    const std::vector<int64_t> dims = {out, in};
    Value column = b.iota(TensorType(ElementType::kS64, dims), 1);
    Value zero = b.constant_splat(0, TensorType(acc, dims));
    std::optional<Value> m;
    for (size_t t = 0; t < taps.idx.size(); ++t) {
      Value hit = b.compare(column, b.broadcast_in_dim(axis::i64_vector(b, taps.idx[t]), dims, {0}),
                            hlo::ComparisonDirection::kEq);
      Value w = b.broadcast_in_dim(weights(b, taps.w[t], mode, grad.dtype(), acc), dims, {0});
      Value term = b.select(hit, w, zero);
      m = m ? b.add(*m, term) : term;
    }
    g = axis::apply_matrix(b, g, axis_dim, *m, /*transposed=*/true);
  }
  return convert_to(b, g, grad.dtype());
}

}  // namespace torch_tpu::ops
