#include "ops/elementwise/compare.h"

#include <vector>

#include "ops/broadcast.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::ops {

namespace {

constexpr hlo::ComparisonDirection kDirections[] = {
    hlo::ComparisonDirection::kEq, hlo::ComparisonDirection::kNe, hlo::ComparisonDirection::kLt,
    hlo::ComparisonDirection::kLe, hlo::ComparisonDirection::kGt, hlo::ComparisonDirection::kGe};

hlo::Value truth(hlo::Builder& b, const hlo::Value& x) {
  return x.dtype() == ElementType::kPred ? x : b.compare(x, splat_like(b, 0, x), "NE");
}

hlo::Value combine(hlo::Builder& b, LogicalOp op, const hlo::Value& x, const hlo::Value& y) {
  switch (op) {
    case LogicalOp::kAnd: return b.and_(x, y);
    case LogicalOp::kOr: return b.or_(x, y);
    case LogicalOp::kXor: return b.xor_(x, y);
  }
  throw hlo::HloError("unknown logical op");
}

}  // namespace

hlo::Value lower_compare(hlo::Builder& b, CompareOp op, const hlo::Value& x, const hlo::Value& y,
                         ElementType compute) {
  auto dims = broadcast_shapes(x.dims(), y.dims(), "compare");
  return b.compare(broadcast_to(b, convert_to(b, x, compute), dims),
                   broadcast_to(b, convert_to(b, y, compute), dims), kDirections[static_cast<int>(op)]);
}

hlo::Value lower_logical(hlo::Builder& b, LogicalOp op, const hlo::Value& x, const hlo::Value& y) {
  auto dims = broadcast_shapes(x.dims(), y.dims(), "logical op");
  return combine(b, op, broadcast_to(b, truth(b, x), dims), broadcast_to(b, truth(b, y), dims));
}

hlo::Value lower_bitwise(hlo::Builder& b, LogicalOp op, const hlo::Value& x, const hlo::Value& y,
                         ElementType out) {
  auto dims = broadcast_shapes(x.dims(), y.dims(), "bitwise op");
  return combine(b, op, broadcast_to(b, convert_to(b, x, out), dims),
                 broadcast_to(b, convert_to(b, y, out), dims));
}

hlo::Value lower_where(hlo::Builder& b, const hlo::Value& condition, const hlo::Value& x,
                       const hlo::Value& y, ElementType out) {
  auto dims = broadcast_shapes(broadcast_shapes(condition.dims(), x.dims(), "where"), y.dims(), "where");
  return b.select(broadcast_to(b, truth(b, condition), dims), broadcast_to(b, convert_to(b, x, out), dims),
                  broadcast_to(b, convert_to(b, y, out), dims));
}

hlo::Value lower_clamp(hlo::Builder& b, const hlo::Value& x, const std::optional<hlo::Value>& lo,
                       const std::optional<hlo::Value>& hi, ElementType out) {
  std::vector<int64_t> dims = x.dims();
  if (lo) dims = broadcast_shapes(dims, lo->dims(), "clamp");
  if (hi) dims = broadcast_shapes(dims, hi->dims(), "clamp");
  // maximum / minimum propagate NaN (the CPU runtime is built so, and TPUs
  // do), which is PyTorch's clamp semantics.
  hlo::Value r = broadcast_to(b, convert_to(b, x, out), dims);
  if (lo) r = b.maximum(r, broadcast_to(b, convert_to(b, *lo, out), dims));
  if (hi) r = b.minimum(r, broadcast_to(b, convert_to(b, *hi, out), dims));
  return r;
}

}  // namespace torch_tpu::ops
