// Lowerings of the _foreach_ ops: one element of the list at a time, built
// from the elementwise lowerings (arithmetic, pointwise, unary, clamp, pow)
// so a whole list becomes one program with one result per element. The
// ATen glue decides each element's result dtype as the per-tensor op would.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

enum class ForeachOp : uint8_t {
  kAdd,       // x, y [, alpha]: x + alpha * y
  kSub,       // x, y [, alpha]: x - alpha * y
  kMul,       // x, y
  kDiv,       // x, y (true division)
  kAddcmul,   // self, t1, t2, value
  kAddcdiv,   // self, t1, t2, value
  kLerp,      // self, end, weight
  kClampMin,  // x, lo (also maximum)
  kClampMax,  // x, hi (also minimum)
  kPow,       // base, exponent
  kCopy,      // src (converted to `out` by the caller's destination)
  kUnary,     // x, with a UnaryOp
};

// The type the op's arithmetic runs in for a result of type `out` (bf16 and
// f16 compute in f32 and round once, as PyTorch's CPU kernels do) and the
// type its runtime scalars should travel as.
ElementType foreach_compute_type(ForeachOp op, ElementType out);

// One element: `args` as listed above (scalars are 0-dim), the result in `out`.
hlo::Value lower_foreach_element(hlo::Builder& b, ForeachOp op, UnaryOp unary, const std::vector<hlo::Value>& args,
                                 ElementType out);

// linalg.vector_norm of `x` over `dims` (normalized, sorted; all of them
// for a whole-tensor norm), in `out` (`x` is converted to `out` first and
// accumulated in f32 when `out` is bf16 / f16). ord: 2, 1, 0, +-inf or any
// other p.
hlo::Value lower_vector_norm(hlo::Builder& b, const hlo::Value& x, double ord, const std::vector<int64_t>& dims,
                             bool keepdim, ElementType out);
// The same over every dimension (a 0-dim result).
hlo::Value lower_vector_norm(hlo::Builder& b, const hlo::Value& x, double ord, ElementType out);

}  // namespace torch_tpu::ops
