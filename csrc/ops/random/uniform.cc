#include "ops/random/uniform.h"

#include "ops/broadcast.h"

namespace torch_tpu::ops {

hlo::Value uniform_f32(hlo::Builder& b, const hlo::Value& seed, const hlo::Value& offset,
                       const std::vector<int64_t>& dims) {
  hlo::Value state = b.concatenate({b.reshape(seed, {1}), b.reshape(offset, {1})}, 0);
  hlo::Value bits = b.rng_bit_generator(state, hlo::TensorType(ElementType::kU32, dims),
                                        hlo::RngAlgorithm::kThreeFry).second;
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
