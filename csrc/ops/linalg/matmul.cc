#include "ops/linalg/matmul.h"

#include <string>

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

hlo::Value times(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& scalar) {
  if (!scalar) return x;
  return b.multiply(x, broadcast_to(b, convert_to(b, *scalar, x.dtype()), x.dims()));
}

}  // namespace

hlo::Value accumulate_dot(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs,
                          const hlo::DotDims& dims) {
  const ElementType dtype = lhs.dtype();
  const ElementType acc = accumulation_type(dtype);
  if (acc != dtype && is_floating(dtype)) {
    // bf16 / f16: the operands widened to f32 (exactly), their products exact
    // there, summed in f32. Not a bf16 x bf16 -> f32 dot: XLA's CPU runtime
    // lacks that for some operand layouts (a folded transpose). The precision
    // keeps TPUs at one bf16 pass for bf16 (exact for bf16 values) and three
    // for f16, whose values bf16 cannot hold.
    const auto precision = dtype == ElementType::kBF16 ? hlo::Precision::kDefault : hlo::Precision::kHigh;
    return b.dot_general(b.convert(lhs, acc), b.convert(rhs, acc), dims, precision);
  }
  // f32 / f64 / complex: no reduced-precision passes.
  const bool highest = acc == dtype && (is_floating(dtype) || is_complex(dtype));
  return b.dot_general(lhs, rhs, dims, highest ? hlo::Precision::kHighest : hlo::Precision::kDefault,
                       acc != dtype ? std::optional<ElementType>(acc) : std::nullopt);
}

hlo::Value lower_product(hlo::Builder& b, Product kind, const hlo::Value& lhs, const hlo::Value& rhs) {
  return convert_to(b, accumulate_dot(b, lhs, rhs, product_dims(kind)), lhs.dtype());
}

hlo::Value lower_add_product(hlo::Builder& b, Product kind, const std::optional<hlo::Value>& self,
                             const hlo::Value& lhs, const hlo::Value& rhs, const std::optional<hlo::Value>& beta,
                             const std::optional<hlo::Value>& alpha) {
  const ElementType out = lhs.dtype();
  hlo::Value product = times(b, accumulate_dot(b, lhs, rhs, product_dims(kind)), alpha);
  if (!self) return convert_to(b, product, out);
  hlo::Value base = convert_to(b, broadcast_to(b, *self, product.dims()), product.dtype());
  base = times(b, base, beta);
  hlo::Value sum = out == ElementType::kPred ? b.or_(base, product) : b.add(base, product);
  return convert_to(b, sum, out);
}

}  // namespace torch_tpu::ops
