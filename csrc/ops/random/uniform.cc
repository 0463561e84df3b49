#include "ops/random/uniform.h"

#include <cmath>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

hlo::Value random_bits(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset, ElementType type,
                       const std::vector<int64_t>& dims) {
  hlo::Value state = b.concatenate({b.reshape(seed, {1}), b.reshape(offset, {1})}, 0);
  return b.rng_bit_generator(state, hlo::TensorType(type, dims), hlo::RngAlgorithm::kThreeFry).second;
}

namespace {

// Bits (u32 for f32, u64 for f64) to floats on the unit interval: the top
// `mantissa` bits as an integer k, then k * 2^-mantissa, or
// (k + 1/2) * 2^-mantissa for the open interval; exact in `type`.
hlo::Value bits_to_unit(hlo::Builder& b, const hlo::Value& bits, ElementType type, UnitInterval interval) {
  const bool f64 = type == ElementType::kF64;
  const int width = f64 ? 64 : 32;
  const int mantissa = (f64 ? 53 : 24) - (interval == UnitInterval::kOpen ? 1 : 0);
  hlo::Value k = b.shift_right_logical(bits, b.constant_splat_int(width - mantissa, bits.type()));
  hlo::Value f = b.convert(k, type);
  if (interval == UnitInterval::kOpen) f = b.add(f, b.constant_splat(0.5, f.type()));
  return b.multiply(f, b.constant_splat(std::ldexp(1.0, -mantissa), f.type()));
}

}  // namespace

std::vector<hlo::Value> unit_uniform(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                                     const std::vector<int64_t>& dims, ElementType type, int count,
                                     UnitInterval interval) {
  const ElementType bits_type = type == ElementType::kF64 ? ElementType::kU64 : ElementType::kU32;
  if (count == 1) return {bits_to_unit(b, random_bits(b, seed, offset, bits_type, dims), type, interval)};
  std::vector<int64_t> all_dims{count};
  all_dims.insert(all_dims.end(), dims.begin(), dims.end());
  hlo::Value all = bits_to_unit(b, random_bits(b, seed, offset, bits_type, all_dims), type, interval);
  std::vector<hlo::Value> out;
  std::vector<int64_t> starts(all_dims.size(), 0), limits = all_dims, strides(all_dims.size(), 1);
  for (int i = 0; i < count; ++i) {
    starts[0] = i;
    limits[0] = i + 1;
    out.push_back(b.reshape(b.slice(all, starts, limits, strides), dims));
  }
  return out;
}

hlo::Value uniform_f32(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                       const std::vector<int64_t>& dims) {
  hlo::Value bits = random_bits(b, seed, offset, ElementType::kU32, dims);
  // 23 random mantissa bits under exponent 0: a float in [1, 2), minus 1.
  hlo::TensorType u32(ElementType::kU32, dims);
  hlo::Value mantissa = b.shift_right_logical(bits, b.constant_splat_int(9, u32));
  hlo::Value one_to_two = b.or_(mantissa, b.constant_splat_int(0x3F800000, u32));
  hlo::Value f = b.bitcast_convert(one_to_two, hlo::TensorType(ElementType::kF32, dims));
  return b.subtract(f, b.constant_splat(1.0, f.type()));
}

std::pair<hlo::Value, hlo::Value> lower_dropout(hlo::Builder& b, const hlo::Value& x, const hlo::Value& seed,
                                                const hlo::Value& offset, const hlo::Value& p,
                                                const hlo::Value& scale) {
  hlo::Value u = uniform_f32(b, seed, offset, x.dims());
  hlo::Value keep = b.compare(u, broadcast_to(b, p, x.dims()), "GE");
  hlo::Value scaled = b.multiply(x, broadcast_to(b, convert_to(b, scale, x.dtype()), x.dims()));
  hlo::Value zero = b.constant_splat_int(0, x.type());
  return {b.select(keep, scaled, zero), keep};
}

hlo::Value lower_dropout_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& mask,
                                  const hlo::Value& scale) {
  hlo::Value zero = b.constant_splat_int(0, grad.type());
  hlo::Value scaled = b.multiply(grad, broadcast_to(b, convert_to(b, scale, grad.dtype()), grad.dims()));
  return b.select(convert_to(b, mask, ElementType::kPred), scaled, zero);
}

}  // namespace torch_tpu::ops
