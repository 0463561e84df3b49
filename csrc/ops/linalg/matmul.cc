#include "ops/linalg/matmul.h"

#include <string>
#include <vector>

#include "ops/broadcast.h"

namespace torch_tpu::ops {

namespace {

hlo::DotDims product_dims(Product kind) {
  switch (kind) {
    case Product::kDot: return {{}, {}, {0}, {0}};
    case Product::kMv: return {{}, {}, {1}, {0}};
    case Product::kMm: return {{}, {}, {1}, {0}};
    case Product::kBmm: return {{0}, {0}, {2}, {1}};
  }
  return {};
}

bool has_unit_batch_dim(const hlo::Value& lhs, const hlo::DotDims& dims) {
  for (int64_t d : dims.lhs_batch_dims) {
    if (lhs.dims()[d] == 1) return true;
  }
  return false;
}

// x without the dimensions marked in `drop` (all of size 1); the batch and
// contracting dimension numbers renumbered to match, the dropped batch ones
// removed.
hlo::Value drop_dims(hlo::Builder& b, const hlo::Value& x, const std::vector<bool>& drop, std::vector<int64_t>& batch,
                     std::vector<int64_t>& contracting) {
  std::vector<int64_t> shape, renumbered(drop.size(), -1);
  for (size_t d = 0; d < drop.size(); ++d) {
    if (drop[d]) continue;
    renumbered[d] = static_cast<int64_t>(shape.size());
    shape.push_back(x.dims()[d]);
  }
  std::vector<int64_t> kept_batch;
  for (int64_t d : batch) {
    if (!drop[d]) kept_batch.push_back(renumbered[d]);
  }
  batch = kept_batch;
  for (int64_t& d : contracting) d = renumbered[d];
  return b.reshape(x, shape);
}

hlo::Value times(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& scalar) {
  if (!scalar) return x;
  return b.multiply(x, broadcast_to(b, convert_to(b, *scalar, x.dtype()), x.dims()));
}

}  // namespace

hlo::Precision full_width_precision(ElementType dtype, hlo::Precision f32) {
  if (dtype == ElementType::kF32 || dtype == ElementType::kC64) return f32;
  // f64 / complex128 at full width; integers have no reduced passes.
  return is_floating(dtype) || is_complex(dtype) ? hlo::Precision::kHighest : hlo::Precision::kDefault;
}

hlo::Value accumulate_dot(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs,
                          const hlo::DotDims& dims, hlo::Precision f32) {
  const ElementType dtype = lhs.dtype();
  if (is_float8(dtype)) {
    // Widened exactly: XLA fuses convert-then-dot into an 8-bit matmul
    // where the hardware has one, and the CPU compiler has no 8-bit dot.
    // Every 8-bit float is a bf16 too, so the default precision multiplies
    // them exactly.
    return b.dot_general(convert_to(b, lhs, ElementType::kF32), convert_to(b, rhs, ElementType::kF32), dims);
  }
  const ElementType acc = accumulation_type(dtype);
  if (acc != dtype && is_floating(dtype) && has_unit_batch_dim(lhs, dims)) {
    // bf16 / f16 with an f32 result: XLA's CPU runtime cannot run such a dot
    // once it has dropped a unit batch dimension itself around a transposed
    // operand (bilinear's backward did that); dropped here, the dot reaches
    // it in a form it runs, and keeps the fast mixed-precision kernels.
    hlo::DotDims kept = dims;
    std::vector<bool> unit_lhs(lhs.rank(), false), unit_rhs(rhs.rank(), false);
    for (size_t i = 0; i < dims.lhs_batch_dims.size(); ++i) {
      const bool unit = lhs.dims()[dims.lhs_batch_dims[i]] == 1;
      unit_lhs[dims.lhs_batch_dims[i]] = unit;
      unit_rhs[dims.rhs_batch_dims[i]] = unit;
    }
    const hlo::Value l = drop_dims(b, lhs, unit_lhs, kept.lhs_batch_dims, kept.lhs_contracting_dims);
    const hlo::Value r = drop_dims(b, rhs, unit_rhs, kept.rhs_batch_dims, kept.rhs_contracting_dims);
    const hlo::Value out = b.dot_general(l, r, kept, hlo::Precision::kDefault, acc);
    // The result's batch dimensions come first, in the lhs's order.
    std::vector<int64_t> shape;
    size_t next = 0;
    for (int64_t d : dims.lhs_batch_dims) shape.push_back(unit_lhs[d] ? 1 : out.dims()[next++]);
    shape.insert(shape.end(), out.dims().begin() + static_cast<int64_t>(next), out.dims().end());
    return b.reshape(out, shape);
  }
  // bf16 / f16 run at the default precision with an f32 result (the
  // accumulator).
  return b.dot_general(lhs, rhs, dims, acc == dtype ? full_width_precision(dtype, f32) : hlo::Precision::kDefault,
                       acc != dtype ? std::optional<ElementType>(acc) : std::nullopt);
}

hlo::Value lower_product(hlo::Builder& b, Product kind, const hlo::Value& lhs, const hlo::Value& rhs,
                         hlo::Precision f32) {
  return convert_to(b, accumulate_dot(b, lhs, rhs, product_dims(kind), f32), lhs.dtype());
}

hlo::Value lower_add_product(hlo::Builder& b, Product kind, const std::optional<hlo::Value>& self,
                             const hlo::Value& lhs, const hlo::Value& rhs, const std::optional<hlo::Value>& beta,
                             const std::optional<hlo::Value>& alpha, hlo::Precision f32) {
  const ElementType out = lhs.dtype();
  hlo::Value product = times(b, accumulate_dot(b, lhs, rhs, product_dims(kind), f32), alpha);
  if (!self) return convert_to(b, product, out);
  hlo::Value base = convert_to(b, broadcast_to(b, *self, product.dims()), product.dtype());
  base = times(b, base, beta);
  hlo::Value sum = out == ElementType::kPred ? b.or_(base, product) : b.add(base, product);
  return convert_to(b, sum, out);
}

hlo::Value lower_int_mm(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs) {
  const hlo::DotDims dims = product_dims(Product::kMm);
  if (lhs.dtype() == rhs.dtype()) return b.dot_general(lhs, rhs, dims, hlo::Precision::kDefault, ElementType::kS32);
  // uint8 times int8: both widened exactly (a dot takes one operand type).
  return b.dot_general(convert_to(b, lhs, ElementType::kS32), convert_to(b, rhs, ElementType::kS32), dims);
}

hlo::Value lower_weight_int8_mm(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& weight,
                                const hlo::Value& scales, hlo::Precision f32) {
  // [m, k] . [n, k] contracting k: the weight's transpose without a copy.
  const hlo::DotDims dims{{}, {}, {1}, {1}};
  const hlo::Value product = accumulate_dot(b, lhs, convert_to(b, weight, lhs.dtype()), dims, f32);
  const hlo::Value s = convert_to(b, scales, product.dtype());
  return convert_to(b, b.multiply(product, b.broadcast_in_dim(s, product.dims(), {1})), lhs.dtype());
}

hlo::Value lower_scaled_mm(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs, const hlo::Value& scale_lhs,
                           const hlo::Value& scale_rhs, const std::optional<hlo::Value>& bias,
                           const std::optional<hlo::Value>& scale_result, ElementType out) {
  const hlo::Value product = accumulate_dot(b, lhs, rhs, product_dims(Product::kMm));
  auto scaled = [&](const hlo::Value& x, const hlo::Value& scale) {
    // A one-element scale of any rank, or a row / column of them.
    const hlo::Value s = convert_to(b, scale, ElementType::kF32);
    const hlo::Value flat = s.dims().size() == 2 ? s : b.reshape(s, {1, 1});
    return b.multiply(x, broadcast_to(b, flat, x.dims()));
  };
  hlo::Value result = scaled(scaled(product, scale_lhs), scale_rhs);
  if (bias) result = b.add(result, broadcast_to(b, convert_to(b, *bias, ElementType::kF32), result.dims()));
  if (scale_result && is_float8(out)) result = scaled(result, *scale_result);
  return convert_to(b, result, out);
}

}  // namespace torch_tpu::ops
