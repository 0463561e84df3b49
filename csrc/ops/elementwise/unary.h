// Lowerings of the elementwise unary math ops (exp, log, sqrt, floor, sign,
// erf, bitwise_not, isnan, ...) and of pow. Each takes the operand's logical
// value and the dtype PyTorch computes in (the glue decides it: integer
// inputs of float ops promote to the default float dtype) and returns the
// result in that dtype, or as i1 for the predicate ops. Complex inputs
// (the ops PyTorch defines for them) compute in their own type; abs of a
// complex value is of the real type.
#pragma once

#include <cstdint>

#include "hlo/builder.h"

namespace torch_tpu::ops {

enum class UnaryOp : uint8_t {
  // same dtype as the input
  kNeg,
  kAbs,
  kFloor,
  kCeil,
  kRound,  // half to even, like std::nearbyint
  kTrunc,
  kFrac,
  kSign,  // sign(NaN) = sign(-0.0) = +0.0, like PyTorch
  kSgn,   // sign for real dtypes; x / |x| for complex (0 at 0)
  kBitwiseNot,
  // float ops (computed in at least f32, rounded back once)
  kExp,
  kExpm1,
  kLog,
  kLog1p,
  kLog2,
  kLog10,
  kSqrt,
  kRsqrt,
  kSin,
  kCos,
  kTan,
  kTanh,
  kSigmoid,
  kReciprocal,
  kErf,
  kErfinv,
  // predicates (i1 result)
  kLogicalNot,
  kIsNan,
  kIsInf,
  kIsPosInf,
  kIsNegInf,
  kSignbit,
};

// `x` converted to `compute`, then the op.
hlo::Value lower_unary(hlo::Builder& b, UnaryOp op, const hlo::Value& x, ElementType compute);

// round(x * 10^decimals) / 10^decimals (negative decimals: the reverse), as
// PyTorch computes it; x is a float type.
hlo::Value lower_round_decimals(hlo::Builder& b, const hlo::Value& x, int64_t decimals);

// NaN, +inf and -inf replaced by the 0-dim values (of x's dtype); integer
// and bool inputs are returned unchanged.
hlo::Value lower_nan_to_num(hlo::Builder& b, const hlo::Value& x, const hlo::Value& nan,
                            const hlo::Value& posinf, const hlo::Value& neginf);

// x ** y, both converted to `out` and broadcast. Integer powers follow C:
// a negative exponent gives 0 except for bases 1 and -1.
hlo::Value lower_pow(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out);

// x ** exponent for the exponents PyTorch computes without pow (0, 1, 2, 3,
// 0.5, -0.5, -1, -2), with the same arithmetic so results match exactly.
bool is_special_pow_exponent(double exponent);
hlo::Value lower_pow_special(hlo::Builder& b, const hlo::Value& x, double exponent, ElementType out);

// Helpers shared by the elementwise lowerings.
// Reduced-precision floats (bf16, f16) compute in f32, like PyTorch's CPU
// kernels do; every other type computes in itself.
ElementType elementwise_compute_type(ElementType t);
// A constant of x's type and shape.
hlo::Value splat_like(hlo::Builder& b, double v, const hlo::Value& like);
// The sign bit of real floats x itself: true for -0.0 and negative NaNs,
// like std::signbit.
hlo::Value sign_bit(hlo::Builder& b, const hlo::Value& x);
// x's complex conjugate; x itself for real types. (Backward formulas of
// holomorphic functions multiply the gradient by the conjugate derivative.)
hlo::Value conjugate(hlo::Builder& b, const hlo::Value& x);
// erf as PyTorch's CPU kernels round it (every user of erf goes through
// this, so gelu and ndtr agree with erf).
hlo::Value erf(hlo::Builder& b, const hlo::Value& x);

}  // namespace torch_tpu::ops
