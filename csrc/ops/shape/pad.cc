#include "ops/shape/pad.h"

#include <algorithm>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

using hlo::TensorType;
using hlo::Value;

// For each of the n + low + high output positions along a dimension of size
// n: the input position it reads.
std::vector<int64_t> source_positions(int64_t n, int64_t low, int64_t high, PadMode mode) {
  std::vector<int64_t> src;
  for (int64_t o = 0; o < n + low + high; ++o) {
    int64_t i = o - low;
    if (mode == PadMode::kReplicate) {
      i = std::clamp<int64_t>(i, 0, n - 1);
    } else {
      if (i < 0) i = -i;
      if (i >= n) i = 2 * (n - 1) - i;
    }
    src.push_back(i);
  }
  return src;
}

Value index_constant(hlo::Builder& b, const std::vector<int64_t>& positions) {
  return b.constant_bytes(positions.data(), positions.size() * sizeof(int64_t),
                          TensorType(ElementType::kS64, {static_cast<int64_t>(positions.size())}));
}

// x[..., positions, ...] along `dim`.
Value take(hlo::Builder& b, const Value& x, int64_t dim, const std::vector<int64_t>& positions) {
  std::vector<int64_t> out = x.dims();
  out[dim] = static_cast<int64_t>(positions.size());
  const TensorType out_type(x.dtype(), out);
  if (out_type.num_elements() == 0) return b.constant_splat_int(0, out_type);
  hlo::GatherDims g;
  for (int64_t d = 0; d < x.rank(); ++d) {
    if (d != dim) g.offset_dims.push_back(d);
  }
  g.collapsed_slice_dims = {dim};
  g.start_index_map = {dim};
  g.index_vector_dim = 1;
  std::vector<int64_t> sizes = x.dims();
  sizes[dim] = 1;
  return b.gather(x, index_constant(b, positions), g, sizes);
}

// The transpose of take(): `g` added into zeros of size n along `dim`.
Value take_backward(hlo::Builder& b, const Value& g, int64_t dim, int64_t n, const std::vector<int64_t>& positions) {
  std::vector<int64_t> in = g.dims();
  in[dim] = n;
  const TensorType in_type(g.dtype(), in);
  Value zeros = b.constant_splat_int(0, in_type);
  if (in_type.num_elements() == 0 || g.type().num_elements() == 0) return zeros;
  hlo::ScatterDims s;
  for (int64_t d = 0; d < g.rank(); ++d) {
    if (d != dim) s.update_window_dims.push_back(d);
  }
  s.inserted_window_dims = {dim};
  s.scatter_dims_to_operand_dims = {dim};
  s.index_vector_dim = 1;
  return b.scatter({zeros}, index_constant(b, positions), {g}, s,
                   [](hlo::Builder& r, const std::vector<Value>& a) {
                     return std::vector<Value>{r.add(a[0], a[1])};
                   })[0];
}

void check_pads(const std::vector<int64_t>& dims, size_t num_pads) {
  if (num_pads > dims.size()) throw hlo::HloError("pad: more padded dimensions than the input has");
}

}  // namespace

Value lower_constant_pad(hlo::Builder& b, const Value& x, const Value& value, const std::vector<int64_t>& lows,
                         const std::vector<int64_t>& highs) {
  if (lows.size() != static_cast<size_t>(x.rank()) || highs.size() != lows.size()) {
    throw hlo::HloError("constant_pad_nd: one (low, high) pair per dimension expected");
  }
  Value fill = convert_to(b, value, x.dtype());
  std::vector<int64_t> out = x.dims();
  for (int64_t d = 0; d < x.rank(); ++d) out[d] += lows[d] + highs[d];
  const TensorType out_type(x.dtype(), out);
  // Everything cropped away (or an empty input): all fill, nothing to read.
  if (out_type.num_elements() == 0) return b.constant_splat_int(0, out_type);
  if (x.type().num_elements() == 0) return b.broadcast_in_dim(fill, out, {});
  return b.pad(x, fill, lows, highs, std::vector<int64_t>(x.rank(), 0));
}

Value lower_index_pad(hlo::Builder& b, const Value& x, const std::vector<std::pair<int64_t, int64_t>>& pads,
                      PadMode mode) {
  check_pads(x.dims(), pads.size());
  Value y = x;
  const int64_t first = x.rank() - static_cast<int64_t>(pads.size());
  for (size_t i = 0; i < pads.size(); ++i) {
    const int64_t d = first + static_cast<int64_t>(i);
    const int64_t n = x.dims()[d];
    if (pads[i].first == 0 && pads[i].second == 0) continue;
    y = take(b, y, d, source_positions(n, pads[i].first, pads[i].second, mode));
  }
  return y;
}

Value lower_index_pad_backward(hlo::Builder& b, const Value& grad, const std::vector<int64_t>& input_dims,
                               const std::vector<std::pair<int64_t, int64_t>>& pads, PadMode mode) {
  check_pads(input_dims, pads.size());
  const ElementType out = grad.dtype();
  Value g = convert_to(b, grad, accumulation_type(out));
  const int64_t first = static_cast<int64_t>(input_dims.size() - pads.size());
  for (size_t i = 0; i < pads.size(); ++i) {
    const int64_t d = first + static_cast<int64_t>(i);
    const int64_t n = input_dims[d];
    if (pads[i].first == 0 && pads[i].second == 0) continue;
    g = take_backward(b, g, d, n, source_positions(n, pads[i].first, pads[i].second, mode));
  }
  return convert_to(b, g, out);
}

}  // namespace torch_tpu::ops
