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

// Integer positions (y, x) [N, Ho, Wo] of an [N, H, W, C] tensor as
// gather / scatter coordinates [N, Ho, Wo, 3] (clamped into range) and
// whether each lies inside.
std::pair<Value, Value> positions(hlo::Builder& b, const std::vector<int64_t>& nhwc, const Value& y, const Value& x) {
  const std::vector<int64_t> pos = y.dims();
  const TensorType it(ElementType::kS64, pos);
  Value yi = b.convert(y, ElementType::kS64);
  Value xi = b.convert(x, ElementType::kS64);
  Value inside = b.and_(b.and_(b.compare(yi, b.constant_splat_int(0, it), hlo::ComparisonDirection::kGe),
                               b.compare(yi, b.constant_splat_int(nhwc[1], it), hlo::ComparisonDirection::kLt)),
                        b.and_(b.compare(xi, b.constant_splat_int(0, it), hlo::ComparisonDirection::kGe),
                               b.compare(xi, b.constant_splat_int(nhwc[2], it), hlo::ComparisonDirection::kLt)));
  yi = b.clamp(b.constant_splat_int(0, TensorType::scalar(ElementType::kS64)), yi,
               b.constant_splat_int(nhwc[1] - 1, TensorType::scalar(ElementType::kS64)));
  xi = b.clamp(b.constant_splat_int(0, TensorType::scalar(ElementType::kS64)), xi,
               b.constant_splat_int(nhwc[2] - 1, TensorType::scalar(ElementType::kS64)));
  std::vector<int64_t> col = pos;
  col.push_back(1);
  Value idx = b.concatenate({b.reshape(b.iota(it, 0), col), b.reshape(yi, col), b.reshape(xi, col)}, 3);
  return {idx, inside};
}

// `v` [N, Ho, Wo] (or with C) zeroed where `inside` is false.
Value mask_inside(hlo::Builder& b, const Value& inside, const Value& v) {
  Value mask = v.rank() == inside.rank() ? inside : b.broadcast_in_dim(inside, v.dims(), {0, 1, 2});
  return b.select(mask, v, b.constant_splat(0, v.type()));
}

// The input ([N, H, W, C]) at integer positions (y, x) of [N, Ho, Wo],
// zero where outside: [N, Ho, Wo, C].
Value pick(hlo::Builder& b, const Value& nhwc, const Value& y, const Value& x) {
  const auto& d = nhwc.dims();
  auto [idx, inside] = positions(b, d, y, x);
  hlo::GatherDims g;
  g.offset_dims = {3};
  g.collapsed_slice_dims = {0, 1, 2};
  g.start_index_map = {0, 1, 2};
  g.index_vector_dim = 3;
  return mask_inside(b, inside, b.gather(nhwc, idx, g, {1, 1, 1, d[3]}));
}

// `into` ([N, H, W, C]) plus `values` ([N, Ho, Wo, C]) added at the
// positions (y, x) that lie inside.
Value add_at(hlo::Builder& b, const Value& into, const Value& y, const Value& x, const Value& values) {
  auto [idx, inside] = positions(b, into.dims(), y, x);
  hlo::ScatterDims s;
  s.update_window_dims = {3};
  s.inserted_window_dims = {0, 1, 2};
  s.scatter_dims_to_operand_dims = {0, 1, 2};
  s.index_vector_dim = 3;
  return b.scatter({into}, idx, {mask_inside(b, inside, values)}, s,
                   [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.add(a[0], a[1])}; })[0];
}

// v [N, Ho, Wo, C] summed over C.
Value channel_sum(hlo::Builder& b, const Value& v) {
  return b.reduce({v}, {b.constant_splat(0, TensorType::scalar(v.dtype()))}, {3},
                  [](hlo::Builder& r, const std::vector<Value>& a) { return std::vector<Value>{r.add(a[0], a[1])}; })[0];
}

// x and y [N, Ho, Wo] as the grid's layout [N, Ho, Wo, 2].
Value stack_xy(hlo::Builder& b, const Value& x, const Value& y) {
  std::vector<int64_t> col = x.dims();
  col.push_back(1);
  return b.concatenate({b.reshape(x, col), b.reshape(y, col)}, 3);
}

// The grid's x and y values [N, Ho, Wo].
std::pair<Value, Value> grid_xy(hlo::Builder& b, const Value& grid, ElementType acc) {
  const auto& gd = grid.dims();
  Value g = convert_to(b, grid, acc);
  const std::vector<int64_t> pos = {gd[0], gd[1], gd[2]};
  return {b.reshape(b.slice(g, {0, 0, 0, 0}, {gd[0], gd[1], gd[2], 1}, {1, 1, 1, 1}), pos),
          b.reshape(b.slice(g, {0, 0, 0, 1}, {gd[0], gd[1], gd[2], 2}, {1, 1, 1, 1}), pos)};
}

// Bilinear and nearest sampling positions: padded pixel coordinates with
// their derivatives.
struct Sampling {
  Coordinate x, y;
};

Sampling sampling(hlo::Builder& b, const Value& grid, const std::vector<int64_t>& input_dims, ElementType acc,
                  int64_t padding, bool align_corners) {
  auto [gx, gy] = grid_xy(b, grid, acc);
  return {source_index(b, gx, input_dims[3], padding, align_corners),
          source_index(b, gy, input_dims[2], padding, align_corners)};
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
      Value term = b.multiply(pick(b, nhwc, c.tap_y[j], c.tap_x[i]), spread(c.wx[i]));
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
    std::vector<int64_t> full = ix.dims();
    full.push_back(in[1]);
    auto term = [&](const Value& y, const Value& x, const Value& w) {
      return b.multiply(pick(b, nhwc, y, x), b.broadcast_in_dim(w, full, {0, 1, 2}));
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
        grad_nhwc = add_at(b, grad_nhwc, c.tap_y[j], c.tap_x[i], b.multiply(go, spread(b.multiply(c.wx[i], c.wy[j]))));
        Value v = b.multiply(pick(b, input_nhwc, c.tap_y[j], c.tap_x[i]), go);
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
    grad_nhwc = add_at(b, grad_nhwc, b.round_nearest_even(iy), b.round_nearest_even(ix), go);
    return {to_nchw(grad_nhwc), convert_to(b, grad_grid, grid.dtype())};
  }
  Value one = splat_like(b, 1, ix);
  Value x0 = b.floor(ix), y0 = b.floor(iy);
  Value x1 = b.add(x0, one), y1 = b.add(y0, one);
  Value west = b.subtract(x1, ix), east = b.subtract(ix, x0);
  Value north = b.subtract(y1, iy), south = b.subtract(iy, y0);
  // The input's gradient: each output's gradient shared out by the weights.
  grad_nhwc = add_at(b, grad_nhwc, y0, x0, b.multiply(go, spread(b.multiply(west, north))));
  grad_nhwc = add_at(b, grad_nhwc, y0, x1, b.multiply(go, spread(b.multiply(east, north))));
  grad_nhwc = add_at(b, grad_nhwc, y1, x0, b.multiply(go, spread(b.multiply(west, south))));
  grad_nhwc = add_at(b, grad_nhwc, y1, x1, b.multiply(go, spread(b.multiply(east, south))));
  // The grid's gradient: the weights' derivatives times the corner values,
  // summed over channels, times the coordinates' own derivatives.
  Value input_nhwc = b.transpose(convert_to(b, input, acc), {0, 2, 3, 1});
  Value nw = pick(b, input_nhwc, y0, x0), ne = pick(b, input_nhwc, y0, x1);
  Value sw = pick(b, input_nhwc, y1, x0), se = pick(b, input_nhwc, y1, x1);
  Value dx = b.add(b.multiply(b.subtract(ne, nw), spread(north)), b.multiply(b.subtract(se, sw), spread(south)));
  Value dy = b.add(b.multiply(b.subtract(sw, nw), spread(west)), b.multiply(b.subtract(se, ne), spread(east)));
  Value gx = b.multiply(channel_sum(b, b.multiply(dx, go)), s.x.grad);
  Value gy = b.multiply(channel_sum(b, b.multiply(dy, go)), s.y.grad);
  return {to_nchw(grad_nhwc), convert_to(b, stack_xy(b, gx, gy), grid.dtype())};
}

}  // namespace torch_tpu::ops
