// Helpers shared by the lowerings: NumPy-style broadcasting, dtype
// conversion of operands and accumulation types.
#pragma once

#include <cstdint>
#include <vector>

#include "hlo/builder.h"

namespace torch_tpu::ops {

// Operands whose shapes do not broadcast: the caller's mistake, not a
// lowering's, so the op glue reports it as PyTorch words it.
struct BroadcastError : hlo::HloError {
  using hlo::HloError::HloError;
};

// The broadcast shape of `a` and `b`; throws BroadcastError naming `op` and
// the first mismatch from the right, as at::infer_size does, when they do
// not broadcast.
std::vector<int64_t> broadcast_shapes(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                                      const char* op);

// `x` broadcast (right-aligned) to `dims`; `x` itself when it already has them.
hlo::Value broadcast_to(hlo::Builder& b, const hlo::Value& x, const std::vector<int64_t>& dims);

// The type sums and products accumulate in: f32 for f16/bf16 and the 8-bit
// floats (as CPU and CUDA do), the type itself otherwise.
constexpr ElementType accumulation_type(ElementType t) {
  return (t == ElementType::kF16 || t == ElementType::kBF16 || is_float8(t)) ? ElementType::kF32 : t;
}

// `x` converted to `type`; `x` itself when it already has it. Complex to
// real keeps the real part and complex to bool tests for nonzero, as
// PyTorch converts (StableHLO leaves both undefined).
hlo::Value convert_to(hlo::Builder& b, const hlo::Value& x, ElementType type);

}  // namespace torch_tpu::ops
