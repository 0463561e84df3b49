#include "ops/nn/convolution.h"

#include <algorithm>
#include <utility>

#include "ops/broadcast.h"
#include "ops/linalg/matmul.h"
#include "ops/nn/depthwise_conv.h"

namespace torch_tpu::ops {

namespace {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

int64_t spatial_count(const hlo::Value& x) { return x.rank() - 2; }

std::vector<int64_t> kernel_sizes(const hlo::Value& w) { return {w.dims().begin() + 2, w.dims().end()}; }

// A convolution accumulating like matmuls do: f32 at the float32 matmul
// precision of `p`, f64 at the highest, 16-bit floats into an f32 result;
// converted to `out`.
hlo::Value convolve(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs, hlo::ConvOptions opts,
                    const ConvParams& p, ElementType out) {
  const ElementType dtype = lhs.dtype();
  const ElementType acc = accumulation_type(dtype);
  if (acc != dtype) {
    opts.result_dtype = acc;
  } else {
    opts.precision = full_width_precision(dtype, p.f32_precision);
  }
  return convert_to(b, b.convolution(lhs, rhs, opts), out);
}

// Negative edge padding becomes a slice: `x` cropped along its spatial dims
// by the negative parts of `pads`, which are then set to 0.
hlo::Value crop_for_negative_pads(hlo::Builder& b, const hlo::Value& x, Pads& pads) {
  bool crop = false;
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  for (size_t i = 0; i < pads.size(); ++i) {
    const int64_t d = static_cast<int64_t>(i) + 2;
    if (pads[i].first < 0) {
      starts[d] = std::min(-pads[i].first, limits[d]);
      pads[i].first = 0;
      crop = true;
    }
    if (pads[i].second < 0) {
      limits[d] = std::max(starts[d], limits[d] + pads[i].second);
      pads[i].second = 0;
      crop = true;
    }
  }
  return crop ? b.slice(x, starts, limits, strides) : x;
}

// The kernel of a transposed convolution ([C, O/g, *k]) as the kernel of
// the equivalent plain one ([O, C/g, *k], spatially flipped).
hlo::Value transposed_kernel(hlo::Builder& b, const hlo::Value& w, int64_t groups) {
  const auto& d = w.dims();
  const int64_t n = spatial_count(w);
  std::vector<int64_t> split = {groups, d[0] / groups, d[1]};
  std::vector<int64_t> perm = {0, 2, 1};
  std::vector<int64_t> merged = {groups * d[1], d[0] / groups};
  for (int64_t i = 0; i < n; ++i) {
    split.push_back(d[i + 2]);
    perm.push_back(i + 3);
    merged.push_back(d[i + 2]);
  }
  hlo::Value k = b.reshape(b.transpose(b.reshape(w, split), perm), merged);
  std::vector<int64_t> spatial;
  for (int64_t i = 0; i < n; ++i) spatial.push_back(i + 2);
  if (spatial.empty()) return k;
  std::string attrs = "dimensions = array<i64";
  for (size_t i = 0; i < spatial.size(); ++i) attrs += (i ? ", " : ": ") + std::to_string(spatial[i]);
  attrs += ">";
  return b.emit("stablehlo.reverse", {k}, {k.type()}, attrs).at(0);
}

hlo::Value plain_conv(hlo::Builder& b, const hlo::Value& x, const hlo::Value& w, const ConvParams& p,
                      ElementType out) {
  const int64_t n = spatial_count(x);
  if (is_depthwise(x, w.dims()[1], kernel_sizes(w), p.groups)) {
    Pads pads;
    for (int64_t i = 0; i < n; ++i) pads.emplace_back(p.padding[i], p.padding[i]);
    return convert_to(b, depthwise_conv(b, x, w, p.stride, pads, p.dilation, accumulation_type(x.dtype())), out);
  }
  hlo::ConvOptions opts;
  opts.dims = hlo::ConvDims::channels_first(n);
  opts.window_strides = p.stride;
  opts.rhs_dilation = p.dilation;
  for (int64_t i = 0; i < n; ++i) opts.padding.emplace_back(p.padding[i], p.padding[i]);
  opts.feature_group_count = p.groups;
  return convolve(b, x, w, opts, p, out);
}

// conv_transpose(x, w): x [N, C, *in], w [C, O/g, *k] -> [N, O, *out] with
// out = (in - 1) * s - 2p + d (k - 1) + output_padding + 1.
hlo::Value transposed_conv(hlo::Builder& b, const hlo::Value& x, const hlo::Value& w, const ConvParams& p,
                           ElementType out) {
  const int64_t n = spatial_count(x);
  hlo::ConvOptions opts;
  opts.dims = hlo::ConvDims::channels_first(n);
  opts.lhs_dilation = p.stride;
  opts.rhs_dilation = p.dilation;
  opts.feature_group_count = p.groups;
  Pads wanted;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t lo = p.dilation[i] * (w.dims()[i + 2] - 1) - p.padding[i];
    wanted.emplace_back(lo, lo + p.output_padding[i]);
  }
  const hlo::Value kernel = transposed_kernel(b, w, p.groups);
  if (is_depthwise(x, kernel.dims()[1], kernel_sizes(kernel), p.groups)) {
    // The input dilated by the stride and padded (negative pads crop),
    // then a depthwise convolution with unit stride.
    std::vector<int64_t> lows(x.rank(), 0), highs(x.rank(), 0), interiors(x.rank(), 0);
    for (int64_t i = 0; i < n; ++i) {
      lows[i + 2] = wanted[i].first;
      highs[i + 2] = wanted[i].second;
      interiors[i + 2] = p.stride[i] - 1;
    }
    hlo::Value dilated = b.pad(x, b.constant_splat(0, hlo::TensorType(x.dtype(), {})), lows, highs, interiors);
    hlo::Value y = depthwise_conv(b, dilated, kernel, std::vector<int64_t>(n, 1), Pads(n, {0, 0}), p.dilation,
                                  accumulation_type(x.dtype()));
    return convert_to(b, y, out);
  }
  // Negative padding: convolve with none and crop the result.
  for (const auto& [lo, hi] : wanted) opts.padding.emplace_back(std::max<int64_t>(lo, 0), std::max<int64_t>(hi, 0));
  hlo::Value y = convolve(b, x, kernel, opts, p, out);
  bool crop = false;
  std::vector<int64_t> starts(y.rank(), 0), limits = y.dims(), strides(y.rank(), 1);
  for (int64_t i = 0; i < n; ++i) {
    const int64_t d = i + 2;
    if (wanted[i].first < 0) {
      starts[d] = -wanted[i].first;
      crop = true;
    }
    if (wanted[i].second < 0) {
      limits[d] += wanted[i].second;
      crop = true;
    }
    limits[d] = std::max(limits[d], starts[d]);
  }
  return crop ? b.slice(y, starts, limits, strides) : y;
}

// d/dw of conv(x, w) for the output gradient g: x [N, C, *in], g [N, O,
// *out] -> [O, C/groups, *k]. The batch is the contracted dim; groups split
// x's channels (now its batch) and g's channels.
hlo::Value weight_grad(hlo::Builder& b, const hlo::Value& x, const hlo::Value& g, const std::vector<int64_t>& k,
                       const ConvParams& p, ElementType out) {
  const int64_t n = spatial_count(x);
  if (is_depthwise(x, x.dims()[1] / p.groups, k, p.groups)) {
    Pads pads;
    for (int64_t i = 0; i < n; ++i) pads.emplace_back(p.padding[i], p.padding[i]);
    hlo::Value w = depthwise_weight_grad(b, x, g, k, p.stride, pads, p.dilation, accumulation_type(x.dtype()));
    return convert_to(b, w, out);
  }
  hlo::ConvOptions opts;
  hlo::ConvDims& d = opts.dims;
  d.input_batch_dim = 1;
  d.input_feature_dim = 0;
  d.kernel_input_feature_dim = 0;
  d.kernel_output_feature_dim = 1;
  d.output_batch_dim = 1;
  d.output_feature_dim = 0;
  for (int64_t i = 0; i < n; ++i) {
    d.input_spatial_dims.push_back(i + 2);
    d.kernel_spatial_dims.push_back(i + 2);
    d.output_spatial_dims.push_back(i + 2);
  }
  opts.window_strides = p.dilation;
  opts.rhs_dilation = p.stride;
  opts.batch_group_count = p.groups;
  Pads pads;
  for (int64_t i = 0; i < n; ++i) {
    const int64_t in = x.dims()[i + 2];
    const int64_t o = g.dims()[i + 2];
    const int64_t out_dilated = o == 0 ? 0 : (o - 1) * p.stride[i] + 1;
    const int64_t k_dilated = (k[i] - 1) * p.dilation[i] + 1;
    const int64_t lo = p.padding[i];
    pads.emplace_back(lo, out_dilated - in + k_dilated - lo - 1);
  }
  hlo::Value lhs = crop_for_negative_pads(b, x, pads);
  opts.padding = pads;
  return convolve(b, lhs, g, opts, p, out);
}

hlo::Value bias_grad(hlo::Builder& b, const hlo::Value& g) {
  const ElementType acc = accumulation_type(g.dtype());
  std::vector<int64_t> dims = {0};
  for (int64_t i = 2; i < g.rank(); ++i) dims.push_back(i);
  hlo::Value x = convert_to(b, g, acc);
  hlo::Value zero = b.constant_splat(0, hlo::TensorType(acc, {}));
  hlo::Value sum = b.reduce({x}, {zero}, dims, [](hlo::Builder& r, const std::vector<hlo::Value>& a) {
    return std::vector<hlo::Value>{r.add(a[0], a[1])};
  }).at(0);
  return convert_to(b, sum, g.dtype());
}

// Crops (high side) or zero-pads `x`'s spatial dims to `sizes`.
hlo::Value fit_spatial(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& sizes) {
  std::vector<int64_t> lows(x.rank(), 0), highs(x.rank(), 0), interiors(x.rank(), 0);
  bool change = false;
  for (size_t i = 0; i < sizes.size(); ++i) {
    highs[i + 2] = sizes[i] - x.dims()[i + 2];
    change = change || highs[i + 2] != 0;
  }
  if (!change) return x;
  return b.pad(x, b.constant_splat(0, hlo::TensorType(x.dtype(), {})), lows, highs, interiors);
}

}  // namespace

hlo::Value lower_convolution(hlo::Builder& b, const hlo::Value& input, const hlo::Value& weight,
                             const std::optional<hlo::Value>& bias, const ConvParams& p) {
  // With a bias, add it to the accumulator before rounding once.
  const ElementType out = input.dtype();
  const ElementType acc = bias ? accumulation_type(out) : out;
  hlo::Value y = p.transposed ? transposed_conv(b, input, weight, p, acc) : plain_conv(b, input, weight, p, acc);
  if (!bias) return y;
  hlo::Value bb = b.broadcast_in_dim(convert_to(b, *bias, acc), y.dims(), {1});
  return convert_to(b, b.add(y, bb), out);
}

ConvGrads lower_convolution_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& input,
                                     const hlo::Value& weight, const ConvParams& p, std::array<bool, 3> mask) {
  const int64_t n = spatial_count(input);
  std::vector<int64_t> in_sizes(input.dims().begin() + 2, input.dims().end());
  std::vector<int64_t> k(weight.dims().begin() + 2, weight.dims().end());
  ConvGrads r;
  if (mask[0]) {
    if (!p.transposed) {
      // The adjoint of a plain convolution: a transposed one whose output
      // padding restores the input's size.
      ConvParams t = p;
      t.transposed = true;
      t.output_padding.assign(n, 0);
      for (int64_t i = 0; i < n; ++i) {
        const int64_t o = grad.dims()[i + 2];
        t.output_padding[i] = in_sizes[i] - ((o - 1) * p.stride[i] - 2 * p.padding[i] + p.dilation[i] * (k[i] - 1) + 1);
      }
      r.input = fit_spatial(b, transposed_conv(b, grad, weight, t, input.dtype()), in_sizes);
    } else {
      ConvParams t = p;
      t.transposed = false;
      r.input = fit_spatial(b, plain_conv(b, grad, weight, t, input.dtype()), in_sizes);
    }
  }
  if (mask[1]) {
    r.weight = p.transposed ? weight_grad(b, grad, input, k, p, weight.dtype())
                            : weight_grad(b, input, grad, k, p, weight.dtype());
  }
  if (mask[2]) r.bias = bias_grad(b, grad);
  return r;
}

}  // namespace torch_tpu::ops
