// Lowerings of comparisons, logical and bitwise binary ops, where and
// clamp. Operands come as logical values of any dtype and broadcastable
// shapes; the glue passes the dtype PyTorch's type promotion chose.
#pragma once

#include <cstdint>
#include <optional>

#include "hlo/builder.h"

namespace torch_tpu::ops {

enum class CompareOp : uint8_t { kEq, kNe, kLt, kLe, kGt, kGe };
// i1 result; both operands compared in `compute`.
hlo::Value lower_compare(hlo::Builder& b, CompareOp op, const hlo::Value& x, const hlo::Value& y,
                         ElementType compute);

enum class LogicalOp : uint8_t { kAnd, kOr, kXor };
// i1 result; each operand is true where it is nonzero (NaN included).
hlo::Value lower_logical(hlo::Builder& b, LogicalOp op, const hlo::Value& x, const hlo::Value& y);
// Bitwise on integers, logical on bool; the result has dtype `out`.
hlo::Value lower_bitwise(hlo::Builder& b, LogicalOp op, const hlo::Value& x, const hlo::Value& y,
                         ElementType out);

// condition ? x : y with all three broadcast; the condition is bool or
// nonzero-is-true; x and y are converted to `out`.
hlo::Value lower_where(hlo::Builder& b, const hlo::Value& condition, const hlo::Value& x,
                       const hlo::Value& y, ElementType out);

// min(max(x, lo), hi) in `out`, NaN from any operand propagating; absent
// bounds are skipped. Bounds broadcast with x.
hlo::Value lower_clamp(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& lo,
                       const std::optional<hlo::Value>& hi, ElementType out);

}  // namespace torch_tpu::ops
