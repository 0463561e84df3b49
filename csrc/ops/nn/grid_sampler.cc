#include "ops/nn/grid_sampler.h"

#include <array>
#include <utility>
#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

Value splat_like(hlo::Builder& b, double v, const Value& like) {
  return b.constant_splat(v, TensorType(like.dtype(), like.dims()));
}

// A coordinate and its derivative with respect to the grid value it came
// from (PyTorch's *_set_grad helpers).
struct Coordinate {
  Value index;
  Value grad;
};

// PyTorch's reflect_coordinates over [twice_low / 2, twice_high / 2].
Coordinate reflect(hlo::Builder& b, const Value& c, int64_t twice_low, int64_t twice_high) {
  if (twice_low == twice_high) return {splat_like(b, 0, c), splat_like(b, 0, c)};
  const double lo = twice_low / 2.0;
  const double span = (twice_high - twice_low) / 2.0;
  Value shifted = b.subtract(c, splat_like(b, lo, c));
  Value sign = b.select(b.compare(shifted, splat_like(b, 0, c), hlo::ComparisonDirection::kLt), splat_like(b, -1, c),
                        splat_like(b, 1, c));
  Value in = b.abs(shifted);
  Value extra = b.remainder(in, splat_like(b, span, c));
  Value flips = b.floor(b.divide(in, splat_like(b, span, c)));
  Value even = b.compare(b.remainder(flips, splat_like(b, 2, c)), splat_like(b, 0, c), hlo::ComparisonDirection::kEq);
  return {b.select(even, b.add(extra, splat_like(b, lo, c)),
                   b.add(b.subtract(splat_like(b, span, c), extra), splat_like(b, lo, c))),
          b.select(even, sign, b.negate(sign))};
}

// PyTorch's grid_sampler_unnormalize(_set_grad): [-1, 1] to pixels.
Coordinate unnormalize(hlo::Builder& b, const Value& coord, int64_t size, bool align_corners) {
  Value one = splat_like(b, 1, coord);
  Value c = align_corners
                ? b.multiply(b.divide(b.add(coord, one), splat_like(b, 2, coord)), splat_like(b, size - 1, coord))
                : b.divide(b.subtract(b.multiply(b.add(coord, one), splat_like(b, size, coord)), one),
                           splat_like(b, 2, coord));
  return {c, splat_like(b, align_corners ? (size - 1) / 2.0 : size / 2.0, coord)};
}

// PyTorch's compute_coordinates(_set_grad): border and reflection padding
// move c into [0, size - 1]. Clipping counts the borders themselves as
// outside for the gradient, as PyTorch does.
Coordinate apply_padding(hlo::Builder& b, Coordinate c, int64_t size, int64_t padding, bool align_corners) {
  if (padding == 2) {
    Coordinate r = align_corners ? reflect(b, c.index, 0, 2 * (size - 1)) : reflect(b, c.index, -1, 2 * size - 1);
    c = {r.index, b.multiply(c.grad, r.grad)};
  }
  if (padding != 0) {
    Value low = splat_like(b, 0, c.index), high = splat_like(b, size - 1, c.index);
    Value inside = b.and_(b.compare(c.index, low, hlo::ComparisonDirection::kGt),
                          b.compare(c.index, high, hlo::ComparisonDirection::kLt));
    c = {b.minimum(b.maximum(c.index, low), high), b.select(inside, c.grad, splat_like(b, 0, c.index))};
  }
  return c;
}

// PyTorch's grid_sampler_compute_source_index(_set_grad).
Coordinate source_index(hlo::Builder& b, const Value& coord, int64_t size, int64_t padding, bool align_corners) {
  return apply_padding(b, unnormalize(b, coord, size, align_corners), size, padding, align_corners);
}

// Keys' cubic convolution weights (A = -0.75, PyTorch's
// get_cubic_upsample_coefficients) of the taps at -1, 0, 1, 2 from the
// floor, for the fraction t; and their derivatives with respect to t.
constexpr double kCubicA = -0.75;

std::array<Value, 4> cubic_weights(hlo::Builder& b, const Value& t) {
  auto k = [&](double v) { return splat_like(b, v, t); };
  const double a = kCubicA;
  // |x| <= 1: ((A + 2) x - (A + 3)) x^2 + 1; 1 < |x| < 2: ((A x - 5A) x + 8A) x - 4A.
  auto near = [&](const Value& x) {
    return b.add(b.multiply(b.multiply(b.subtract(b.multiply(k(a + 2), x), k(a + 3)), x), x), k(1));
  };
  auto far = [&](const Value& x) {
    return b.subtract(b.multiply(b.add(b.multiply(b.subtract(b.multiply(k(a), x), k(5 * a)), x), k(8 * a)), x),
                      k(4 * a));
  };
  Value u = b.subtract(k(1), t);
  return {far(b.add(t, k(1))), near(t), near(u), far(b.add(u, k(1)))};
}

std::array<Value, 4> cubic_weight_derivatives(hlo::Builder& b, const Value& t) {
  auto k = [&](double v) { return splat_like(b, v, t); };
  const double a = kCubicA;
  auto near = [&](const Value& x) {  // d/dx of the |x| <= 1 piece
    return b.multiply(b.subtract(b.multiply(k(3 * (a + 2)), x), k(2 * (a + 3))), x);
  };
  auto far = [&](const Value& x) {  // d/dx of the 1 < |x| < 2 piece
    return b.add(b.multiply(b.subtract(b.multiply(k(3 * a), x), k(10 * a)), x), k(8 * a));
  };
  Value u = b.subtract(k(1), t);
  return {far(b.add(t, k(1))), near(t), b.negate(near(u)), b.negate(far(b.add(u, k(1))))};
}

// Integer positions (one [N, out...] value per spatial dim, in the input's
// order: (y, x) or (z, y, x)) of a channels-last [N, spatial..., C] tensor,
// as gather / scatter coordinates [N, out..., 1 + k] (clamped into range),
// and whether each lies inside.
std::pair<Value, Value> positions(hlo::Builder& b, const std::vector<int64_t>& dims, const std::vector<Value>& coords) {
  const std::vector<int64_t> pos = coords[0].dims();
  const TensorType it(ElementType::kS64, pos);
  const int64_t rank = static_cast<int64_t>(pos.size());
  std::vector<int64_t> col = pos;
  col.push_back(1);
  std::vector<Value> parts = {b.reshape(b.iota(it, 0), col)};
  Value inside = b.constant_splat_int(1, TensorType(ElementType::kPred, pos));
  for (size_t a = 0; a < coords.size(); ++a) {
    const int64_t size = dims[a + 1];
    inside = b.and_(inside, b.compare(coords[a], coords[a], "EQ"));  // NaN is outside
    Value i = b.convert(coords[a], ElementType::kS64);
    inside = b.and_(inside, b.and_(b.compare(i, b.constant_splat_int(0, it), hlo::ComparisonDirection::kGe),
                                   b.compare(i, b.constant_splat_int(size, it), hlo::ComparisonDirection::kLt)));
    i = b.clamp(b.constant_splat_int(0, TensorType::scalar(ElementType::kS64)), i,
                b.constant_splat_int(size - 1, TensorType::scalar(ElementType::kS64)));
    parts.push_back(b.reshape(i, col));
  }
  return {b.concatenate(parts, rank), inside};
}

// Leading dims [0, k) of rank-(k + 1) values.
std::vector<int64_t> leading(int64_t k) {
  std::vector<int64_t> d(k);
  for (int64_t i = 0; i < k; ++i) d[i] = i;
  return d;
}

// `v` [N, out...] (or with C) zeroed where `inside` is false.
Value mask_inside(hlo::Builder& b, const Value& inside, const Value& v) {
  Value mask = v.rank() == inside.rank() ? inside : b.broadcast_in_dim(inside, v.dims(), leading(inside.rank()));
  return b.select(mask, v, b.constant_splat(0, v.type()));
}

// The channels-last input at integer positions `coords`, zero where
// outside: [N, out..., C].
Value pick(hlo::Builder& b, const Value& input, const std::vector<Value>& coords) {
  const auto& d = input.dims();
  const int64_t k = static_cast<int64_t>(d.size()) - 1;  // N and the spatial dims
  auto [idx, inside] = positions(b, d, coords);
  hlo::GatherDims g;
  g.offset_dims = {k};
  g.collapsed_slice_dims = leading(k);
  g.start_index_map = leading(k);
  g.index_vector_dim = k;
  std::vector<int64_t> slice(k, 1);
  slice.push_back(d.back());
  return mask_inside(b, inside, b.gather(input, idx, g, slice));
}

// `into` (channels-last) plus `values` ([N, out..., C]) added at the
// positions `coords` that lie inside.
Value add_at(hlo::Builder& b, const Value& into, const std::vector<Value>& coords, const Value& values) {
  const int64_t k = into.rank() - 1;
  auto [idx, inside] = positions(b, into.dims(), coords);
  hlo::ScatterDims s;
  s.update_window_dims = {k};
  s.inserted_window_dims = leading(k);
  s.scatter_dims_to_operand_dims = leading(k);
  s.index_vector_dim = k;
  return b.scatter({into}, idx, {mask_inside(b, inside, values)}, s,
                   [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.add(a[0], a[1])}; })[0];
}

// v [N, out..., C] summed over C.
Value channel_sum(hlo::Builder& b, const Value& v) {
  return b.reduce({v}, {b.constant_splat(0, TensorType::scalar(v.dtype()))}, {v.rank() - 1},
                  [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.add(a[0], a[1])}; })[0];
}

// Per-coordinate values [N, out...] as the grid's layout [N, out..., k].
Value stack_coords(hlo::Builder& b, const std::vector<Value>& parts) {
  std::vector<int64_t> col = parts[0].dims();
  col.push_back(1);
  std::vector<Value> columns;
  for (const Value& p : parts) columns.push_back(b.reshape(p, col));
  return b.concatenate(columns, parts[0].rank());
}

Value stack_xy(hlo::Builder& b, const Value& x, const Value& y) { return stack_coords(b, {x, y}); }

// The grid's components [N, out...] in its order (x, y[, z]).
std::vector<Value> grid_components(hlo::Builder& b, const Value& grid, ElementType acc) {
  const std::vector<int64_t>& gd = grid.dims();
  const int64_t k = gd.back(), last = grid.rank() - 1;
  Value g = convert_to(b, grid, acc);
  std::vector<int64_t> pos(gd.begin(), gd.end() - 1);
  std::vector<Value> parts;
  for (int64_t c = 0; c < k; ++c) {
    std::vector<int64_t> starts(grid.rank(), 0), limits = gd, strides(grid.rank(), 1);
    starts[last] = c;
    limits[last] = c + 1;
    parts.push_back(b.reshape(b.slice(g, starts, limits, strides), pos));
  }
  return parts;
}

// The grid's x and y values [N, Ho, Wo].
std::pair<Value, Value> grid_xy(hlo::Builder& b, const Value& grid, ElementType acc) {
  std::vector<Value> parts = grid_components(b, grid, acc);
  return {parts[0], parts[1]};
}

// F.grid_sample reads a NaN grid value as -1 where padding clips the
// coordinate (border, reflection), as CPU's 2-d kernel does; with zeros
// padding a NaN stays NaN (a NaN result, or 0 for nearest, as CPU).
Value nan_as_minus_one(hlo::Builder& b, const Value& v, int64_t padding) {
  if (padding == 0) return v;
  return b.select(b.compare(v, v, "NE"), b.constant_splat(-1, v.type()), v);
}

// Bilinear and nearest sampling positions: padded pixel coordinates with
// their derivatives.
struct Sampling {
  Coordinate x, y;
};

Sampling sampling(hlo::Builder& b, const Value& grid, const std::vector<int64_t>& input_dims, ElementType acc,
                  int64_t padding, bool align_corners) {
  auto [gx, gy] = grid_xy(b, grid, acc);
  return {source_index(b, nan_as_minus_one(b, gx, padding), input_dims[3], padding, align_corners),
          source_index(b, nan_as_minus_one(b, gy, padding), input_dims[2], padding, align_corners)};
}

// Bicubic sampling's 4 x 4 taps around each position: unnormalized
// coordinates (padding applies to each tap, not to the position), the
// floor and the fractions.
struct Bicubic {
  Coordinate x, y;   // unnormalized, with d/dgrid
  Value x0, y0;      // floors
  std::array<Value, 4> wx, wy;
  // Tap (i, j) at columns x0 - 1 + i and rows y0 - 1 + j, padded.
  std::array<Value, 4> tap_x, tap_y;
};

Bicubic bicubic_taps(hlo::Builder& b, const Value& grid, const std::vector<int64_t>& nhwc_dims, ElementType acc,
                     int64_t padding, bool align_corners) {
  auto [gx, gy] = grid_xy(b, grid, acc);
  Bicubic c;
  c.x = unnormalize(b, gx, nhwc_dims[2], align_corners);
  c.y = unnormalize(b, gy, nhwc_dims[1], align_corners);
  if (padding != 2) {
    // Beyond a few pixels outside, every tap is outside (zeros) or on the
    // border: clamping there changes nothing but keeps floor and fraction
    // exact for huge coordinates, where float rounding would make the
    // weights cancel badly.
    auto clamp = [&](const Value& v, int64_t size) {
      return b.minimum(b.maximum(v, splat_like(b, -3, v)), splat_like(b, size + 2, v));
    };
    c.x.index = clamp(c.x.index, nhwc_dims[2]);
    c.y.index = clamp(c.y.index, nhwc_dims[1]);
  }
  c.x0 = b.floor(c.x.index);
  c.y0 = b.floor(c.y.index);
  c.wx = cubic_weights(b, b.subtract(c.x.index, c.x0));
  c.wy = cubic_weights(b, b.subtract(c.y.index, c.y0));
  for (int i = 0; i < 4; ++i) {
    Value dx = splat_like(b, i - 1, c.x0), dy = splat_like(b, i - 1, c.y0);
    c.tap_x[i] = apply_padding(b, {b.add(c.x0, dx), dx}, nhwc_dims[2], padding, align_corners).index;
    c.tap_y[i] = apply_padding(b, {b.add(c.y0, dy), dy}, nhwc_dims[1], padding, align_corners).index;
  }
  return c;
}

// Bicubic grid sampling of nhwc [N, H, W, C] -> [N, Ho, Wo, C]: each row of
// taps interpolated along x, then the rows along y (PyTorch's order).
Value bicubic(hlo::Builder& b, const Value& nhwc, const Value& grid, int64_t padding, bool align_corners) {
  Bicubic c = bicubic_taps(b, grid, nhwc.dims(), nhwc.dtype(), padding, align_corners);
  std::vector<int64_t> full = c.x0.dims();
  full.push_back(nhwc.dims()[3]);
  auto spread = [&](const Value& w) { return b.broadcast_in_dim(w, full, {0, 1, 2}); };
  Value out;
  for (int j = 0; j < 4; ++j) {
    Value row;
    for (int i = 0; i < 4; ++i) {
      Value term = b.multiply(pick(b, nhwc, {c.tap_y[j], c.tap_x[i]}), spread(c.wx[i]));
      row = i == 0 ? term : b.add(row, term);
    }
    Value term = b.multiply(row, spread(c.wy[j]));
    out = j == 0 ? term : b.add(out, term);
  }
  return out;
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
  if (interpolation == 2) {
    return convert_to(b, b.transpose(bicubic(b, nhwc, grid, padding, align_corners), {0, 3, 1, 2}), input.dtype());
  }
  Sampling s = sampling(b, grid, in, acc, padding, align_corners);
  const Value& ix = s.x.index;
  const Value& iy = s.y.index;
  Value r;
  if (interpolation == 1) {
    r = pick(b, nhwc, {b.round_nearest_even(iy), b.round_nearest_even(ix)});
  } else {
    Value one = splat_like(b, 1, ix);
    Value x0 = b.floor(ix), y0 = b.floor(iy);
    Value x1 = b.add(x0, one), y1 = b.add(y0, one);
    // PyTorch's corner weights, term by term.
    Value nw = b.multiply(b.subtract(x1, ix), b.subtract(y1, iy));
    Value ne = b.multiply(b.subtract(ix, x0), b.subtract(y1, iy));
    Value sw = b.multiply(b.subtract(x1, ix), b.subtract(iy, y0));
    Value se = b.multiply(b.subtract(ix, x0), b.subtract(iy, y0));
    std::vector<int64_t> full = ix.dims();
    full.push_back(in[1]);
    auto term = [&](const Value& y, const Value& x, const Value& w) {
      return b.multiply(pick(b, nhwc, {y, x}), b.broadcast_in_dim(w, full, {0, 1, 2}));
    };
    r = b.add(b.add(b.add(term(y0, x0, nw), term(y0, x1, ne)), term(y1, x0, sw)), term(y1, x1, se));
  }
  return convert_to(b, b.transpose(r, {0, 3, 1, 2}), input.dtype());
}

GridSamplerGrads lower_grid_sampler_2d_backward(hlo::Builder& b, const Value& grad_output, const Value& input,
                                                const Value& grid, int64_t interpolation, int64_t padding,
                                                bool align_corners) {
  const ElementType acc = input.dtype();
  const auto& in = input.dims();
  const auto& gd = grid.dims();
  const std::vector<int64_t> nhwc_dims = {in[0], in[2], in[3], in[1]};
  Value grad_nhwc = b.constant_splat(0, TensorType(acc, nhwc_dims));
  Value grad_grid = b.constant_splat(0, TensorType(acc, gd));
  auto to_nchw = [&](const Value& x) { return convert_to(b, b.transpose(x, {0, 3, 1, 2}), input.dtype()); };
  if (TensorType(acc, grad_output.dims()).num_elements() == 0) {
    return {to_nchw(grad_nhwc), convert_to(b, grad_grid, grid.dtype())};
  }
  Value go = b.transpose(convert_to(b, grad_output, acc), {0, 2, 3, 1});  // [N, Ho, Wo, C]
  const std::vector<int64_t>& full = go.dims();
  auto spread = [&](const Value& w) { return b.broadcast_in_dim(w, full, {0, 1, 2}); };
  if (interpolation == 2) {
    Bicubic c = bicubic_taps(b, grid, nhwc_dims, acc, padding, align_corners);
    std::array<Value, 4> dx = cubic_weight_derivatives(b, b.subtract(c.x.index, c.x0));
    std::array<Value, 4> dy = cubic_weight_derivatives(b, b.subtract(c.y.index, c.y0));
    Value input_nhwc = b.transpose(convert_to(b, input, acc), {0, 2, 3, 1});
    Value gx = splat_like(b, 0, go), gy = splat_like(b, 0, go);
    for (int j = 0; j < 4; ++j) {
      for (int i = 0; i < 4; ++i) {
        grad_nhwc = add_at(b, grad_nhwc, {c.tap_y[j], c.tap_x[i]}, b.multiply(go, spread(b.multiply(c.wx[i], c.wy[j]))));
        Value v = b.multiply(pick(b, input_nhwc, {c.tap_y[j], c.tap_x[i]}), go);
        gx = b.add(gx, b.multiply(v, spread(b.multiply(dx[i], c.wy[j]))));
        gy = b.add(gy, b.multiply(v, spread(b.multiply(c.wx[i], dy[j]))));
      }
    }
    return {to_nchw(grad_nhwc), convert_to(b, stack_xy(b, b.multiply(channel_sum(b, gx), c.x.grad),
                                                        b.multiply(channel_sum(b, gy), c.y.grad)),
                                               grid.dtype())};
  }
  Sampling s = sampling(b, grid, in, acc, padding, align_corners);
  const Value& ix = s.x.index;
  const Value& iy = s.y.index;
  if (interpolation == 1) {
    grad_nhwc = add_at(b, grad_nhwc, {b.round_nearest_even(iy), b.round_nearest_even(ix)}, go);
    return {to_nchw(grad_nhwc), convert_to(b, grad_grid, grid.dtype())};
  }
  Value one = splat_like(b, 1, ix);
  Value x0 = b.floor(ix), y0 = b.floor(iy);
  Value x1 = b.add(x0, one), y1 = b.add(y0, one);
  Value west = b.subtract(x1, ix), east = b.subtract(ix, x0);
  Value north = b.subtract(y1, iy), south = b.subtract(iy, y0);
  // The input's gradient: each output's gradient shared out by the weights.
  grad_nhwc = add_at(b, grad_nhwc, {y0, x0}, b.multiply(go, spread(b.multiply(west, north))));
  grad_nhwc = add_at(b, grad_nhwc, {y0, x1}, b.multiply(go, spread(b.multiply(east, north))));
  grad_nhwc = add_at(b, grad_nhwc, {y1, x0}, b.multiply(go, spread(b.multiply(west, south))));
  grad_nhwc = add_at(b, grad_nhwc, {y1, x1}, b.multiply(go, spread(b.multiply(east, south))));
  // The grid's gradient: the weights' derivatives times the corner values,
  // summed over channels, times the coordinates' own derivatives.
  Value input_nhwc = b.transpose(convert_to(b, input, acc), {0, 2, 3, 1});
  Value nw = pick(b, input_nhwc, {y0, x0}), ne = pick(b, input_nhwc, {y0, x1});
  Value sw = pick(b, input_nhwc, {y1, x0}), se = pick(b, input_nhwc, {y1, x1});
  Value dx = b.add(b.multiply(b.subtract(ne, nw), spread(north)), b.multiply(b.subtract(se, sw), spread(south)));
  Value dy = b.add(b.multiply(b.subtract(sw, nw), spread(west)), b.multiply(b.subtract(se, ne), spread(east)));
  Value gx = b.multiply(channel_sum(b, b.multiply(dx, go)), s.x.grad);
  Value gy = b.multiply(channel_sum(b, b.multiply(dy, go)), s.y.grad);
  return {to_nchw(grad_nhwc), convert_to(b, stack_xy(b, gx, gy), grid.dtype())};
}

namespace {

// The 3-d sampling positions (x, y, z) of a [N, Do, Ho, Wo, 3] grid over
// an input [N, C, D, H, W], padded, with their derivatives.
std::array<Coordinate, 3> sampling_3d(hlo::Builder& b, const Value& grid, const std::vector<int64_t>& in, ElementType acc,
                                      int64_t padding, bool align_corners) {
  std::vector<Value> g = grid_components(b, grid, acc);
  std::array<Coordinate, 3> c = {source_index(b, g[0], in[4], padding, align_corners),
                                 source_index(b, g[1], in[3], padding, align_corners),
                                 source_index(b, g[2], in[2], padding, align_corners)};
  if (padding != 0) {
    // CPU's 3-d kernel clips a NaN coordinate to the far edge (its
    // std::min / std::max keep the bound); the 2-d one reads NaN as -1.
    const int64_t sizes[3] = {in[4], in[3], in[2]};
    for (int a = 0; a < 3; ++a) {
      Value nan = b.compare(c[a].index, c[a].index, "NE");
      c[a] = {b.select(nan, splat_like(b, sizes[a] - 1, c[a].index), c[a].index),
              b.select(nan, splat_like(b, 0, c[a].grad), c[a].grad)};
    }
  }
  return c;
}

// The 8 corners around each position in PyTorch's order (top / bottom z,
// then north / south y, then west / east x): their coordinates (z, y, x)
// and per-axis weights, each paired with its derivative's sign.
struct Corner {
  std::vector<Value> coords;  // z, y, x
  std::array<Value, 3> w;     // x, y, z weights
  std::array<double, 3> sign; // d weight / d coordinate, x, y, z
};

std::vector<Corner> trilinear_corners(hlo::Builder& b, const std::array<Coordinate, 3>& c) {
  std::array<Value, 3> low, high;
  for (int a = 0; a < 3; ++a) {
    low[a] = b.floor(c[a].index);
    high[a] = b.add(low[a], splat_like(b, 1, low[a]));
  }
  std::vector<Corner> corners;
  for (int z = 0; z < 2; ++z) {
    for (int y = 0; y < 2; ++y) {
      for (int x = 0; x < 2; ++x) {
        const int bits[3] = {x, y, z};
        Corner k;
        for (int a = 0; a < 3; ++a) {
          k.w[a] = bits[a] ? b.subtract(c[a].index, low[a]) : b.subtract(high[a], c[a].index);
          k.sign[a] = bits[a] ? 1.0 : -1.0;
        }
        k.coords = {z ? high[2] : low[2], y ? high[1] : low[1], x ? high[0] : low[0]};
        corners.push_back(k);
      }
    }
  }
  return corners;
}

}  // namespace

Value lower_grid_sampler_3d(hlo::Builder& b, const Value& input, const Value& grid, int64_t interpolation,
                            int64_t padding, bool align_corners) {
  const ElementType acc = input.dtype();
  const auto& in = input.dims();
  const auto& gd = grid.dims();
  const std::vector<int64_t> out_dims = {in[0], in[1], gd[1], gd[2], gd[3]};
  if (TensorType(acc, out_dims).num_elements() == 0) return b.constant_splat(0, TensorType(input.dtype(), out_dims));
  Value channels_last = b.transpose(convert_to(b, input, acc), {0, 2, 3, 4, 1});
  std::array<Coordinate, 3> c = sampling_3d(b, grid, in, acc, padding, align_corners);
  Value r;
  if (interpolation == 1) {
    r = pick(b, channels_last, {b.round_nearest_even(c[2].index), b.round_nearest_even(c[1].index),
                                b.round_nearest_even(c[0].index)});
  } else {
    std::vector<int64_t> full = c[0].index.dims();
    full.push_back(in[1]);
    for (const Corner& k : trilinear_corners(b, c)) {
      Value w = b.multiply(b.multiply(k.w[0], k.w[1]), k.w[2]);
      Value term = b.multiply(pick(b, channels_last, k.coords), b.broadcast_in_dim(w, full, {0, 1, 2, 3}));
      r = r.valid() ? b.add(r, term) : term;
    }
    // With zeros padding CPU's 3-d kernel skips the corners of a NaN
    // coordinate (all outside): 0, not NaN.
    Value any_nan = b.or_(b.or_(b.compare(c[0].index, c[0].index, "NE"), b.compare(c[1].index, c[1].index, "NE")),
                          b.compare(c[2].index, c[2].index, "NE"));
    r = b.select(b.broadcast_in_dim(any_nan, full, {0, 1, 2, 3}), b.constant_splat(0, r.type()), r);
  }
  return convert_to(b, b.transpose(r, {0, 4, 1, 2, 3}), input.dtype());
}

GridSamplerGrads lower_grid_sampler_3d_backward(hlo::Builder& b, const Value& grad_output, const Value& input,
                                                const Value& grid, int64_t interpolation, int64_t padding,
                                                bool align_corners) {
  const ElementType acc = input.dtype();
  const auto& in = input.dims();
  const std::vector<int64_t> last_dims = {in[0], in[2], in[3], in[4], in[1]};
  Value grad_in = b.constant_splat(0, TensorType(acc, last_dims));
  auto to_input_layout = [&](const Value& x) { return convert_to(b, b.transpose(x, {0, 4, 1, 2, 3}), input.dtype()); };
  Value zero_grid = convert_to(b, b.constant_splat(0, TensorType(acc, grid.dims())), grid.dtype());
  if (TensorType(acc, grad_output.dims()).num_elements() == 0) return {to_input_layout(grad_in), zero_grid};
  Value go = b.transpose(convert_to(b, grad_output, acc), {0, 2, 3, 4, 1});  // [N, Do, Ho, Wo, C]
  std::array<Coordinate, 3> c = sampling_3d(b, grid, in, acc, padding, align_corners);
  if (interpolation == 1) {
    grad_in = add_at(b, grad_in, {b.round_nearest_even(c[2].index), b.round_nearest_even(c[1].index),
                                  b.round_nearest_even(c[0].index)}, go);
    return {to_input_layout(grad_in), zero_grid};
  }
  const std::vector<int64_t>& full = go.dims();
  auto spread = [&](const Value& w) { return b.broadcast_in_dim(w, full, {0, 1, 2, 3}); };
  Value channels_last = b.transpose(convert_to(b, input, acc), {0, 2, 3, 4, 1});
  std::array<Value, 3> g = {splat_like(b, 0, go), splat_like(b, 0, go), splat_like(b, 0, go)};
  for (const Corner& k : trilinear_corners(b, c)) {
    grad_in = add_at(b, grad_in, k.coords, b.multiply(go, spread(b.multiply(b.multiply(k.w[0], k.w[1]), k.w[2]))));
    Value v = b.multiply(pick(b, channels_last, k.coords), go);
    for (int a = 0; a < 3; ++a) {
      Value others = b.multiply(k.w[(a + 1) % 3], k.w[(a + 2) % 3]);
      Value term = b.multiply(v, spread(b.multiply(others, splat_like(b, k.sign[a], others))));
      g[a] = b.add(g[a], term);
    }
  }
  std::vector<Value> parts;
  for (int a = 0; a < 3; ++a) parts.push_back(b.multiply(channel_sum(b, g[a]), c[a].grad));
  return {to_input_layout(grad_in), convert_to(b, stack_coords(b, parts), grid.dtype())};
}

}  // namespace torch_tpu::ops
