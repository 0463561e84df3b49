// Lowerings of the matrix products (dot, mv, mm, bmm) and their fused
// "beta * self + alpha * product" forms (addmv, addmm, baddbmm).
//
// Precision: f32 and complex64 products run at the precision the caller
// passes as `f32` (torch.set_float32_matmul_precision: HIGHEST by default,
// so results match CPU closely; a TPU would otherwise use one bf16 pass);
// f64 products always at HIGHEST; bf16 and f16 products accumulate in f32
// and are rounded once, at the end.
#pragma once

#include <optional>

#include "hlo/builder.h"
#include "ops/broadcast.h"

namespace torch_tpu::ops {

enum class Product : char {
  kDot = 'd',  // [k] . [k] -> []
  kMv = 'v',   // [n, k] . [k] -> [n]
  kMm = 'm',   // [n, k] . [k, m] -> [n, m]
  kBmm = 'b',  // [b, n, k] . [b, k, m] -> [b, n, m]
};

// The product of lhs and rhs (same dtype), in that dtype.
hlo::Value lower_product(hlo::Builder& b, Product kind, const hlo::Value& lhs, const hlo::Value& rhs,
                         hlo::Precision f32 = hlo::Precision::kHighest);

// beta * self + alpha * (lhs . rhs), with self broadcast to the product's
// shape and the result in the operands' dtype. beta and alpha are 0-dim
// runtime scalars of accumulation_type(); absent means 1. No self means
// beta = 0: self is not read at all (NaN and inf in it are ignored, as on
// CPU).
hlo::Value lower_add_product(hlo::Builder& b, Product kind, const std::optional<hlo::Value>& self,
                             const hlo::Value& lhs, const hlo::Value& rhs, const std::optional<hlo::Value>& beta,
                             const std::optional<hlo::Value>& alpha, hlo::Precision f32 = hlo::Precision::kHighest);


// The general contraction behind every product above, returned in
// accumulation_type(lhs.dtype()).
hlo::Value accumulate_dot(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs,
                          const hlo::DotDims& dims, hlo::Precision f32 = hlo::Precision::kHighest);

// The XLA precision of a product or convolution of `dtype` operands that
// accumulates in its own type, given the float32 matmul precision `f32`:
// `f32` for f32 and complex64 (whose parts are f32), HIGHEST for f64 and
// complex128.
hlo::Precision full_width_precision(ElementType dtype, hlo::Precision f32);

// torch._int_mm: int8 (or uint8) lhs [m, k] times int8 rhs [k, n], summed
// in int32 (wrapping as CPU's int32 accumulator does). Two int8 operands
// stay int8 in the dot, which a TPU's matrix unit multiplies natively.
hlo::Value lower_int_mm(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs);

// aten::_weight_int8pack_mm (torchao's int8 weight-only linear): lhs [m, k]
// (f32, bf16 or f16) times int8 weight [n, k] transposed, each column scaled
// by scales [n] (lhs's dtype); the weight is widened exactly to lhs's dtype,
// the product accumulated in f32 (f32 at `f32` precision) and rounded once.
hlo::Value lower_weight_int8_mm(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& weight,
                                const hlo::Value& scales, hlo::Precision f32);

// torch._scaled_mm: (lhs @ rhs) * scale_lhs * scale_rhs (+ bias), from
// 8-bit float [m, k] and [k, n] operands, accumulated in f32. A scale is one
// element (per tensor) or 2-D ([m, 1] for lhs, [1, n] for rhs: per row or
// column). scale_result multiplies 8-bit float results only, as CUDA's
// D scale does. The result is rounded once, to `out`.
hlo::Value lower_scaled_mm(hlo::Builder& b, const hlo::Value& lhs, const hlo::Value& rhs, const hlo::Value& scale_lhs,
                           const hlo::Value& scale_rhs, const std::optional<hlo::Value>& bias,
                           const std::optional<hlo::Value>& scale_result, ElementType out);

}  // namespace torch_tpu::ops
