#include "ops/broadcast.h"

#include <algorithm>
#include <string>

namespace torch_tpu::ops {

std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const char* op) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> out(rank);
  for (size_t i = rank; i-- > 0;) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      throw BroadcastError(std::string(op) + ": The size of tensor a (" + std::to_string(da) +
                           ") must match the size of tensor b (" + std::to_string(db) +
                           ") at non-singleton dimension " + std::to_string(i));
    }
    out[i] = da == 1 ? db : da;
  }
  return out;
}

hlo::Value broadcast_to(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims) {
  if (x.dims() == dims) return x;
  const int64_t offset = static_cast<int64_t>(dims.size()) - x.rank();
  std::vector<int64_t> map(x.rank());
  for (int64_t i = 0; i < x.rank(); ++i) map[i] = offset + i;
  return b.broadcast_in_dim(x, dims, map);
}

hlo::Value convert_to(hlo::Builder& b, const hlo::Value& x, ElementType type) {
  if (x.dtype() == type) return x;
  if (is_complex(x.dtype()) && !is_complex(type)) {
    if (type == ElementType::kPred) return b.compare(x, b.constant_splat(0, x.type()), "NE");
    return convert_to(b, b.real(x), type);
  }
  if (x.dtype() == ElementType::kPred && (is_floating(type) || is_complex(type))) {
    // A select, not a convert: XLA rewrites convert(mask) * y into
    // select(mask, y, 0), which turns False * inf (NaN in PyTorch) into 0.
    const hlo::TensorType t(type, x.dims());
    return b.select(x, b.constant_splat(1, t), b.constant_splat(0, t));
  }
  if (type == ElementType::kU8 && is_floating(x.dtype())) {
    // PyTorch casts floats to uint8 through int64 (c10's
    // static_cast_with_inter_type), so -1.0 wraps to 255 on CPU and CUDA
    // alike; XLA's direct convert would saturate it to 0.
    return b.convert(b.convert(x, ElementType::kS64), type);
  }
  const bool narrow_float = is_float8(type) || type == ElementType::kF16 || type == ElementType::kBF16;
  const bool wide_source = x.dtype() == ElementType::kF64 || (is_integer(x.dtype()) && element_size(x.dtype()) > 2);
  if (narrow_float && wide_source) {
    // c10 casts double and wide integers to 16- and 8-bit floats through
    // float (two roundings: 1 + 2^-11 + 2^-30 becomes 1.0 as a half, where
    // one rounding gives 1 + 2^-10); XLA's convert rounds once.
    return convert_to(b, b.convert(x, ElementType::kF32), type);
  }
  if (type == ElementType::kF8E4M3FN && x.dtype() != ElementType::kPred) {
    // PyTorch saturates casts to float8_e4m3fn (infinity too) at +-448;
    // XLA's convert makes NaN of them. c10 casts integers through float;
    // other 8-bit floats widen exactly (+-448 may not fit them).
    const bool widen = is_integer(x.dtype()) || is_float8(x.dtype());
    const hlo::Value wide = widen ? b.convert(x, ElementType::kF32) : x;
    const hlo::TensorType bound(wide.dtype(), {});
    return b.convert(b.clamp(b.constant_splat(-448.0, bound), wide, b.constant_splat(448.0, bound)), type);
  }
  return b.convert(x, type);
}

}  // namespace torch_tpu::ops
