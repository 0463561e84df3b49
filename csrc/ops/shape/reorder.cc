#include "ops/shape/reorder.h"

#include <string>

#include "hlo/types.h"
#include "ops/reduction/scan.h"

namespace torch_tpu::ops {

namespace {

std::string i64_array(const std::vector<int64_t>& v) {
  std::string s = "array<i64";
  for (size_t i = 0; i < v.size(); ++i) s += (i == 0 ? ": " : ", ") + std::to_string(v[i]);
  return s + ">";
}

// x[start:limit] along `dim`.
hlo::Value slice_dim(hlo::Builder& b, const hlo::Value& x, int64_t dim, int64_t start, int64_t limit) {
  std::vector<int64_t> starts(x.rank(), 0), limits = x.dims(), strides(x.rank(), 1);
  starts[dim] = start;
  limits[dim] = limit;
  return b.slice(x, starts, limits, strides);
}

}  // namespace

hlo::Value lower_flip(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  std::vector<int64_t> flipped;
  for (int64_t d : dims) {
    if (d < 0 || d >= x.rank()) throw hlo::HloError("aten::flip: dimension out of range");
    if (x.dims()[d] > 1) flipped.push_back(d);
  }
  if (flipped.empty()) return x;
  return b.emit("stablehlo.reverse", {x}, {x.type()}, "dimensions = " + i64_array(flipped))[0];
}

hlo::Value lower_roll(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& shifts,
                      const std::vector<int64_t>& dims) {
  if (dims.empty()) {
    if (shifts.size() != 1) throw hlo::HloError("aten::roll: one shift expected without dims");
    const int64_t n = x.type().num_elements();
    hlo::Value flat = b.reshape(x, {n});
    return b.reshape(lower_roll(b, flat, shifts, {0}), x.dims());
  }
  if (shifts.size() != dims.size()) throw hlo::HloError("aten::roll: shifts and dims differ in length");
  hlo::Value y = x;
  for (size_t i = 0; i < dims.size(); ++i) {
    const int64_t d = dims[i];
    if (d < 0 || d >= y.rank()) throw hlo::HloError("aten::roll: dimension out of range");
    const int64_t n = y.dims()[d];
    if (n == 0) continue;
    const int64_t s = ((shifts[i] % n) + n) % n;
    if (s == 0) continue;
    // The last s elements move to the front.
    y = b.concatenate({slice_dim(b, y, d, n - s, n), slice_dim(b, y, d, 0, n - s)}, d);
  }
  return y;
}

hlo::Value lower_repeat(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& repeats) {
  const int64_t extra = static_cast<int64_t>(repeats.size()) - x.rank();
  if (extra < 0) throw hlo::HloError("aten::repeat: fewer repeats than dimensions");
  // [r0, s0, r1, s1, ...] with x's dims at the odd positions, then merged pairwise.
  std::vector<int64_t> wide, map, out;
  for (size_t i = 0; i < repeats.size(); ++i) {
    const int64_t size = static_cast<int64_t>(i) < extra ? 1 : x.dims()[i - extra];
    if (repeats[i] < 0) throw hlo::HloError("aten::repeat: negative repeat");
    wide.push_back(repeats[i]);
    wide.push_back(size);
    if (static_cast<int64_t>(i) >= extra) map.push_back(static_cast<int64_t>(2 * i + 1));
    out.push_back(repeats[i] * size);
  }
  hlo::Value spread = b.broadcast_in_dim(x, wide, map);
  return b.reshape(spread, out);
}

hlo::Value lower_repeat_interleave_indices(hlo::Builder& b, const hlo::Value& repeats, int64_t out_size) {
  if (repeats.rank() != 1) throw hlo::HloError("aten::repeat_interleave: repeats must be 1-D");
  const int64_t n = repeats.dims()[0];
  const hlo::TensorType out_type(ElementType::kS64, {out_size});
  if (n == 0 || out_size == 0) return b.constant_splat_int(0, out_type);
  // The index steps up by one at every running total of the counts; the
  // totals are scattered as +1 marks and summed up.
  hlo::Value totals = lower_cumsum(b, repeats, 0, ElementType::kS64);
  hlo::Value starts = b.reshape(slice_dim(b, totals, 0, 0, n - 1), {n - 1, 1});
  hlo::Value marks = b.constant_splat_int(0, out_type);
  if (n > 1) {
    hlo::ScatterDims dims;
    dims.inserted_window_dims = {0};
    dims.scatter_dims_to_operand_dims = {0};
    dims.index_vector_dim = 1;
    marks = b.scatter({marks}, starts, {b.constant_splat_int(1, hlo::TensorType(ElementType::kS64, {n - 1}))}, dims,
                      [](hlo::Builder& r, const std::vector<hlo::Value>& a) {
                        return std::vector<hlo::Value>{r.add(a[0], a[1])};
                      })[0];
  }
  return lower_cumsum(b, marks, 0, ElementType::kS64);
}

}  // namespace torch_tpu::ops
