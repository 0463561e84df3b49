// Lowerings of the float unary math ops beyond the basic set in unary.h:
// inverse and hyperbolic trigonometry, exp2, erfc, the gamma family
// (lgamma, digamma, polygamma), modified Bessel functions (i0, i0e, i1,
// i1e), the error-function family (erfcx, ndtri, log_ndtr), spherical
// Bessel j0, sinc, entr and logit. Each takes the operand's logical value and
// the float dtype of the result (the glue promotes integer inputs to the
// default float dtype); bf16 / f16 compute in f32 and round once, like
// PyTorch's CPU kernels. Special values (poles, infinities, zeros) follow
// the CPU kernels.
#pragma once

#include <cstdint>
#include <optional>
#include <utility>

#include "hlo/builder.h"

namespace torch_tpu::ops {

enum class SpecialOp : uint8_t {
  kAsin,
  kAcos,
  kAtan,
  kSinh,
  kCosh,
  kAsinh,
  kAcosh,
  kAtanh,
  kExp2,
  kErfc,
  kLgamma,
  kDigamma,
  kI0,
  kI0e,
  kI1,
  kI1e,
  kSinc,
  kEntr,
  kModifiedBesselI0,  // torch.special's names for i0 and i1
  kModifiedBesselI1,
  kErfcx,
  kNdtri,
  kLogNdtr,
  kSphericalBesselJ0,
  kModifiedBesselK0,
  kModifiedBesselK1,
  kScaledModifiedBesselK0,  // exp(x) K0(x)
  kScaledModifiedBesselK1,
  kBesselJ0,
  kBesselJ1,
  kBesselY0,
  kBesselY1,
  kAiryAi,
};

// `x` converted to `out` (a float type), then the op.
hlo::Value lower_special(hlo::Builder& b, SpecialOp op, const hlo::Value& x, ElementType out);

// (mantissa, exponent) with x = mantissa * 2^exponent, |mantissa| in
// [0.5, 1), as std::frexp: zero, inf and NaN give (x, 0). exponent is i32.
std::pair<hlo::Value, hlo::Value> lower_frexp(hlo::Builder& b, const hlo::Value& x);

// The n-th derivative of digamma (n >= 0).
hlo::Value lower_polygamma(hlo::Builder& b, int64_t n, const hlo::Value& x, ElementType out);

// log(z / (1 - z)) with z = x clamped to [eps, 1 - eps] when eps (a 0-dim
// value) is given.
hlo::Value lower_logit(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& eps,
                       ElementType out);
// grad / (x (1 - x)); outside [0, 1] NaN (no eps) or outside [eps, 1 - eps] 0.
hlo::Value lower_logit_backward(hlo::Builder& b, const hlo::Value& grad, const hlo::Value& x,
                                const std::optional<hlo::Value>& eps, ElementType out);

}  // namespace torch_tpu::ops
