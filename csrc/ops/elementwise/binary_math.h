// Lowerings of the binary math ops beyond + - * /: atan2, hypot, logaddexp,
// xlogy, copysign, nextafter, heaviside, fmax / fmin, fmod, remainder
// (Python's sign rule), floor division, bit shifts, gcd / lcm, zeta, the
// regularized incomplete gamma functions and the orthogonal polynomials.
// Operands come as logical values of any dtype and broadcastable shapes;
// the glue passes the dtype PyTorch's type promotion chose (`out`). Float
// ops compute bf16 / f16 in f32 and round once, like the CPU kernels.
#pragma once

#include <cstdint>

#include "hlo/builder.h"

namespace torch_tpu::ops {

enum class BinaryMathOp : uint8_t {
  kAtan2,
  kHypot,
  kLogaddexp,
  kLogaddexp2,
  kXlogy,
  kXlog1py,
  kCopysign,
  kNextafter,
  kHeaviside,
  kFmax,
  kFmin,
  kFmod,
  kRemainder,
  kFloorDivide,
  kShiftLeft,
  kShiftRight,
  kGcd,
  kLcm,
  kZeta,
  kIgamma,   // P(a, x): incomplete_gamma.h
  kIgammac,  // Q(a, x)
  // torch.special's orthogonal polynomials P_n(x): x, then n (polynomials.h)
  kChebyshevT,
  kChebyshevU,
  kChebyshevV,
  kChebyshevW,
  kShiftedChebyshevT,
  kShiftedChebyshevU,
  kShiftedChebyshevV,
  kShiftedChebyshevW,
  kHermiteH,
  kHermiteHe,
  kLaguerreL,
  kLegendreP,
};

// log(exp(x) + exp(y)) of two complex values of one type, as CPU's kernel
// orders and special-cases them (logaddexp and logcumsumexp share it).
hlo::Value complex_logaddexp(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y);

hlo::Value lower_binary_math(hlo::Builder& b, BinaryMathOp op, const hlo::Value& x, const hlo::Value& y,
                             ElementType out);

// Floor division exactly as PyTorch's CPU kernel computes it: for floats
// from fmod (so 1 // 0.1 is 9, not 10), with IEEE results for a zero
// divisor; for integers C division stepped down when inexact and the signs
// differ. x and y already have type `out` and one shape.
hlo::Value floor_divide_same_type(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y);

// A 0-dim i1: some element of the integer `y` is zero (false when empty).
hlo::Value any_zero(hlo::Builder& b, const hlo::Value& y);

}  // namespace torch_tpu::ops
