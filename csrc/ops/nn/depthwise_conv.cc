#include "ops/nn/depthwise_conv.h"

#include <utility>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

// Beyond this many taps the sum's one fused loop reads the input too often.
constexpr int64_t kMaxTaps = 64;

int64_t tap_count(const std::vector<int64_t>& k) {
  int64_t n = 1;
  for (int64_t d : k) n *= d;
  return n;
}

// x padded and, for a channel multiplier m > 1, each channel repeated m
// times: [N, C m, *padded].
hlo::Value prepare_input(hlo::Builder& b, const hlo::Value& x, int64_t channels_out,
                         const std::vector<std::pair<int64_t, int64_t>>& padding) {
  const int64_t rank = x.rank();
  std::vector<int64_t> lows(rank, 0), highs(rank, 0), interiors(rank, 0);
  bool pad = false;
  for (size_t i = 0; i < padding.size(); ++i) {
    lows[i + 2] = padding[i].first;
    highs[i + 2] = padding[i].second;
    pad = pad || padding[i].first != 0 || padding[i].second != 0;
  }
  hlo::Value xp = pad ? b.pad(x, b.constant_splat(0, hlo::TensorType(x.dtype(), {})), lows, highs, interiors) : x;
  const int64_t c = x.dims()[1], m = channels_out / c;
  if (m == 1) return xp;
  std::vector<int64_t> spread{xp.dims()[0], c, m}, dims{0, 1};
  for (int64_t i = 2; i < rank; ++i) {
    spread.push_back(xp.dims()[i]);
    dims.push_back(i + 1);
  }
  std::vector<int64_t> merged = xp.dims();
  merged[1] = c * m;
  return b.reshape(b.broadcast_in_dim(xp, spread, dims), merged);
}

// Calls visit(tap index per spatial dim, flat tap number) for every tap.
template <typename Visit>
void for_each_tap(const std::vector<int64_t>& k, Visit visit) {
  std::vector<int64_t> tap(k.size(), 0);
  for (int64_t flat = 0; flat < tap_count(k); ++flat) {
    int64_t rest = flat;
    for (int64_t i = static_cast<int64_t>(k.size()) - 1; i >= 0; --i) {
      tap[i] = rest % k[i];
      rest /= k[i];
    }
    visit(tap, flat);
  }
}

// The input under tap `tap`: xp [N, O, *padded] -> [N, O, *out].
hlo::Value tap_slice(hlo::Builder& b, const hlo::Value& xp, const std::vector<int64_t>& tap,
                     const std::vector<int64_t>& out, const std::vector<int64_t>& stride,
                     const std::vector<int64_t>& dilation) {
  std::vector<int64_t> starts(xp.rank(), 0), limits = xp.dims(), strides(xp.rank(), 1);
  for (size_t i = 0; i < tap.size(); ++i) {
    const int64_t d = static_cast<int64_t>(i) + 2;
    starts[d] = tap[i] * dilation[i];
    limits[d] = starts[d] + (out[i] - 1) * stride[i] + 1;
    strides[d] = stride[i];
  }
  return b.slice(xp, starts, limits, strides);
}


// w [O, 1, *k] as [O, taps].
hlo::Value weight_columns(hlo::Builder& b, const hlo::Value& w) {
  const int64_t o = w.dims()[0];
  return b.reshape(w, {o, tap_count(std::vector<int64_t>(w.dims().begin() + 2, w.dims().end()))});
}

std::vector<int64_t> output_sizes(const hlo::Value& xp, const std::vector<int64_t>& k,
                                  const std::vector<int64_t>& stride, const std::vector<int64_t>& dilation) {
  std::vector<int64_t> out;
  for (size_t i = 0; i < k.size(); ++i) {
    const int64_t span = xp.dims()[i + 2] - dilation[i] * (k[i] - 1) - 1;
    out.push_back(span < 0 ? 0 : span / stride[i] + 1);
  }
  return out;
}

}  // namespace

bool is_depthwise(const hlo::Value& x, int64_t kernel_in_channels, const std::vector<int64_t>& k, int64_t groups) {
  if (groups <= 1 || x.rank() < 3 || x.dims()[1] != groups || kernel_in_channels != 1) return false;
  if (is_complex(x.dtype()) || !is_floating(x.dtype())) return false;
  return tap_count(k) <= kMaxTaps;
}

hlo::Value depthwise_conv(hlo::Builder& b, const hlo::Value& x, const hlo::Value& w,
                          const std::vector<int64_t>& stride, const std::vector<std::pair<int64_t, int64_t>>& padding,
                          const std::vector<int64_t>& dilation, ElementType acc) {
  const std::vector<int64_t> k(w.dims().begin() + 2, w.dims().end());
  const int64_t o = w.dims()[0];
  hlo::Value xp = prepare_input(b, x, o, padding);
  const std::vector<int64_t> out = output_sizes(xp, k, stride, dilation);
  std::vector<int64_t> out_dims{x.dims()[0], o};
  out_dims.insert(out_dims.end(), out.begin(), out.end());
  hlo::Value columns = convert_to(b, weight_columns(b, w), acc);
  hlo::Value sum = b.constant_splat(0, hlo::TensorType(acc, out_dims));
  bool empty = false;
  for (int64_t d : out_dims) empty = empty || d == 0;
  if (empty) return sum;
  for_each_tap(k, [&](const std::vector<int64_t>& tap, int64_t flat) {
    hlo::Value part = convert_to(b, tap_slice(b, xp, tap, out, stride, dilation), acc);
    hlo::Value weight = b.reshape(b.slice(columns, {0, flat}, {o, flat + 1}, {1, 1}), {o});
    sum = b.add(sum, b.multiply(part, b.broadcast_in_dim(weight, out_dims, {1})));
  });
  return sum;
}

hlo::Value depthwise_weight_grad(hlo::Builder& b, const hlo::Value& x, const hlo::Value& g,
                                 const std::vector<int64_t>& k, const std::vector<int64_t>& stride,
                                 const std::vector<std::pair<int64_t, int64_t>>& padding,
                                 const std::vector<int64_t>& dilation, ElementType acc) {
  const int64_t o = g.dims()[1];
  hlo::Value xp = prepare_input(b, x, o, padding);
  const std::vector<int64_t> out(g.dims().begin() + 2, g.dims().end());
  hlo::Value grad = convert_to(b, g, acc);
  std::vector<int64_t> reduced{0};
  for (int64_t i = 2; i < g.rank(); ++i) reduced.push_back(i);
  std::vector<hlo::Value> products, zeros;
  for_each_tap(k, [&](const std::vector<int64_t>& tap, int64_t) {
    products.push_back(b.multiply(convert_to(b, tap_slice(b, xp, tap, out, stride, dilation), acc), grad));
    zeros.push_back(b.constant_splat(0, hlo::TensorType(acc, {})));
  });
  const size_t t = products.size();
  auto add_each = [t](hlo::Builder& r, const std::vector<hlo::Value>& a) {
    std::vector<hlo::Value> s;
    for (size_t i = 0; i < t; ++i) s.push_back(r.add(a[i], a[t + i]));
    return s;
  };
  std::vector<hlo::Value> sums = b.reduce(products, zeros, reduced, add_each);
  for (auto& v : sums) v = b.reshape(v, {o, 1});
  std::vector<int64_t> w_dims{o, 1};
  w_dims.insert(w_dims.end(), k.begin(), k.end());
  return b.reshape(sums.size() == 1 ? sums[0] : b.concatenate(sums, 1), w_dims);
}

}  // namespace torch_tpu::ops
