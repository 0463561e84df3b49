// ATen glue for comparisons (eq ne lt le gt ge), logical and bitwise binary
// ops, where and clamp: type promotion, broadcasting, CPU scalar operands,
// dtype errors like CPU and the functional / in-place / out= forms, calling
// the lowerings in csrc/ops/elementwise/compare.cc.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/result_type.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/elementwise/compare.h"

namespace torch_tpu::aten {

namespace {

using c10::ScalarType;
using ops::CompareOp;
using ops::LogicalOp;

// ---- helpers (the shared ones are in aten/elementwise_args.h) -----------------

ArgSlot add_scalar(OpCall& call, const c10::Scalar& s, ScalarType type) {
  call.scalars.push_back({to_element_type(type, call.name), cast_scalar(s, type)});
  return {true, call.scalars.size() - 1};
}

void append_type(std::string& attributes, ScalarType t) { attributes.push_back(static_cast<char>(t)); }

// An op of two operands (tensors or scalars) and its lowering.
struct Binary {
  OpCall call;
  ArgSlot x, y;
};

using BinaryLowering = std::function<hlo::Value(hlo::Builder&, const hlo::Value&, const hlo::Value&)>;

LoweringBody binary_body(const Binary& p, BinaryLowering lower) {
  return [x = p.x, y = p.y, lower = std::move(lower)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                       const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{lower(b, x.pick(t, s), y.pick(t, s))};
  };
}

at::Tensor run_binary(const Binary& p, BinaryLowering lower) {
  return in_iterator_layout(run_op(p.call, binary_body(p, std::move(lower))).at(0), p.call.tensors);
}

void run_binary_into(const Binary& p, BinaryLowering lower, at::Tensor& out) {
  run_op_into(p.call, binary_body(p, std::move(lower)), out);
}

std::vector<int64_t> broadcast_shape(const at::Tensor& a, const at::Tensor& b) {
  return at::infer_size(a.sizes(), b.sizes());
}

// ---- comparisons ------------------------------------------------------------------

const char* compare_name(CompareOp op) {
  switch (op) {
    case CompareOp::kEq: return "aten::eq";
    case CompareOp::kNe: return "aten::ne";
    case CompareOp::kLt: return "aten::lt";
    case CompareOp::kLe: return "aten::le";
    case CompareOp::kGt: return "aten::gt";
    case CompareOp::kGe: return "aten::ge";
  }
  return "?";
}

void check_compare_dtype(CompareOp op, ScalarType compute) {
  if (c10::isComplexType(compute) && op != CompareOp::kEq && op != CompareOp::kNe) {
    not_implemented_for(compare_name(op) + 6, compute);
  }
}

Binary compare_call(CompareOp op, const at::Tensor& self, const at::Tensor* other_tensor,
                    const c10::Scalar* other_scalar, ScalarType compute) {
  check_compare_dtype(op, compute);
  Binary p{OpCall{compare_name(op), "", {}, {}}, {}, {}};
  p.x = add_operand(p.call, self, compute);
  p.y = other_tensor ? add_operand(p.call, *other_tensor, compute) : add_scalar(p.call, *other_scalar, compute);
  p.call.attributes.push_back(static_cast<char>(op));
  append_type(p.call.attributes, compute);
  append_slot(p.call.attributes, p.x);
  append_slot(p.call.attributes, p.y);
  return p;
}

BinaryLowering compare_lowering(CompareOp op, ScalarType compute) {
  return [op, c = to_element_type(compute)](hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
    return ops::lower_compare(b, op, x, y, c);
  };
}

template <CompareOp Op>
at::Tensor compare_tensor(const at::Tensor& self, const at::Tensor& other) {
  const ScalarType compute = at::result_type(self, other);
  broadcast_shape(self, other);
  return run_binary(compare_call(Op, self, &other, nullptr, compute), compare_lowering(Op, compute));
}

template <CompareOp Op>
at::Tensor compare_scalar(const at::Tensor& self, const c10::Scalar& other) {
  const ScalarType compute = at::result_type(self, other);
  return run_binary(compare_call(Op, self, nullptr, &other, compute), compare_lowering(Op, compute));
}

// Comparisons write 0 / 1 into an output of any dtype.
template <CompareOp Op>
at::Tensor& compare_tensor_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  const ScalarType compute = at::result_type(self, other);
  prepare_out(out, broadcast_shape(self, other), false, {self, other});
  run_binary_into(compare_call(Op, self, &other, nullptr, compute), compare_lowering(Op, compute), out);
  return out;
}

template <CompareOp Op>
at::Tensor& compare_tensor_(at::Tensor& self, const at::Tensor& other) {
  const ScalarType compute = at::result_type(self, other);
  prepare_out(self, broadcast_shape(self, other), true);
  run_binary_into(compare_call(Op, self, &other, nullptr, compute), compare_lowering(Op, compute), self);
  return self;
}

template <CompareOp Op>
at::Tensor& compare_scalar_out(const at::Tensor& self, const c10::Scalar& other, at::Tensor& out) {
  const ScalarType compute = at::result_type(self, other);
  prepare_out(out, self.sizes(), false, {self});
  run_binary_into(compare_call(Op, self, nullptr, &other, compute), compare_lowering(Op, compute), out);
  return out;
}

template <CompareOp Op>
at::Tensor& compare_scalar_(at::Tensor& self, const c10::Scalar& other) {
  const ScalarType compute = at::result_type(self, other);
  run_binary_into(compare_call(Op, self, nullptr, &other, compute), compare_lowering(Op, compute), self);
  return self;
}

// ---- logical and bitwise ops -------------------------------------------------------------

const char* logical_name(LogicalOp op, bool bitwise) {
  switch (op) {
    case LogicalOp::kAnd: return bitwise ? "aten::bitwise_and" : "aten::logical_and";
    case LogicalOp::kOr: return bitwise ? "aten::bitwise_or" : "aten::logical_or";
    case LogicalOp::kXor: return bitwise ? "aten::bitwise_xor" : "aten::logical_xor";
  }
  return "?";
}

// Logical ops read the operands' truth after casting them to their common
// dtype, as CPU's comparison iterator does (int16 256 meets uint8 as 0);
// result_type raises CPU's error for the unsigned types it cannot promote.
Binary logical_call(LogicalOp op, const at::Tensor& self, const at::Tensor& other) {
  const ScalarType common = at::result_type(self, other);
  Binary p{OpCall{logical_name(op, false), "", {}, {}}, {}, {}};
  p.x = add_operand(p.call, self, common);
  p.y = add_operand(p.call, other, common);
  p.call.attributes.push_back(static_cast<char>(op));
  append_type(p.call.attributes, common);
  append_slot(p.call.attributes, p.x);
  append_slot(p.call.attributes, p.y);
  return p;
}

BinaryLowering logical_lowering(LogicalOp op, const at::Tensor& self, const at::Tensor& other) {
  return [op, common = to_element_type(at::result_type(self, other))](hlo::Builder& b, const hlo::Value& x,
                                                                      const hlo::Value& y) {
    return ops::lower_logical(b, op, ops::convert_to(b, x, common), ops::convert_to(b, y, common));
  };
}

template <LogicalOp Op>
at::Tensor logical(const at::Tensor& self, const at::Tensor& other) {
  broadcast_shape(self, other);
  return run_binary(logical_call(Op, self, other), logical_lowering(Op, self, other));
}

template <LogicalOp Op>
at::Tensor& logical_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  prepare_out(out, broadcast_shape(self, other), false, {self, other});
  run_binary_into(logical_call(Op, self, other), logical_lowering(Op, self, other), out);
  return out;
}

template <LogicalOp Op>
at::Tensor& logical_(at::Tensor& self, const at::Tensor& other) {
  prepare_out(self, broadcast_shape(self, other), true);
  run_binary_into(logical_call(Op, self, other), logical_lowering(Op, self, other), self);
  return self;
}

ScalarType bitwise_result(LogicalOp op, const at::Tensor& self, const at::Tensor& other) {
  const ScalarType t = at::result_type(self, other);
  if (!c10::isIntegralType(t, true)) not_implemented_for(logical_name(op, true) + 6, t);
  return t;
}

Binary bitwise_call(LogicalOp op, const at::Tensor& self, const at::Tensor& other, ScalarType result) {
  Binary p{OpCall{logical_name(op, true), "", {}, {}}, {}, {}};
  p.x = add_operand(p.call, self, result);
  p.y = add_operand(p.call, other, result);
  p.call.attributes.push_back(static_cast<char>(op));
  append_type(p.call.attributes, result);
  append_slot(p.call.attributes, p.x);
  append_slot(p.call.attributes, p.y);
  return p;
}

BinaryLowering bitwise_lowering(LogicalOp op, ScalarType result) {
  return [op, r = to_element_type(result)](hlo::Builder& b, const hlo::Value& x, const hlo::Value& y) {
    return ops::lower_bitwise(b, op, x, y, r);
  };
}

template <LogicalOp Op>
at::Tensor bitwise(const at::Tensor& self, const at::Tensor& other) {
  const ScalarType result = bitwise_result(Op, self, other);
  broadcast_shape(self, other);
  return run_binary(bitwise_call(Op, self, other, result), bitwise_lowering(Op, result));
}

template <LogicalOp Op>
at::Tensor& bitwise_into(const at::Tensor& self, const at::Tensor& other, at::Tensor& out, bool inplace) {
  // CPU's TensorIterator refuses a result its out cannot hold before the
  // kernel refuses the dtype (int64 &= 2.5: "result type Float can't be
  // cast to the desired output type Long").
  check_castable(at::result_type(self, other), out);
  const ScalarType result = bitwise_result(Op, self, other);
  prepare_out(out, broadcast_shape(self, other), inplace, {self, other});
  run_binary_into(bitwise_call(Op, self, other, result), bitwise_lowering(Op, result), out);
  return out;
}

template <LogicalOp Op>
at::Tensor& bitwise_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  return bitwise_into<Op>(self, other, out, false);
}

template <LogicalOp Op>
at::Tensor& bitwise_(at::Tensor& self, const at::Tensor& other) {
  return bitwise_into<Op>(self, other, self, true);
}

// ---- where ---------------------------------------------------------------------------------

struct Where {
  OpCall call{"aten::where", "", {}, {}};
  ArgSlot condition, x, y;
  ScalarType result;
};

Where where_call(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  TORCH_CHECK(condition.scalar_type() == ScalarType::Bool || condition.scalar_type() == ScalarType::Byte,
              "where expected condition to be a boolean tensor, but got a tensor with dtype ",
              condition.scalar_type());
  if (condition.scalar_type() == ScalarType::Byte) {
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                    "future version of PyTorch. Use a boolean condition instead.");
  }
  Where w;
  w.result = at::result_type(self, other);
  at::infer_size(at::infer_size(condition.sizes(), self.sizes()), other.sizes());
  w.condition = add_operand(w.call, condition, condition.scalar_type());
  w.x = add_operand(w.call, self, w.result);
  w.y = add_operand(w.call, other, w.result);
  append_type(w.call.attributes, w.result);
  append_slot(w.call.attributes, w.condition);
  append_slot(w.call.attributes, w.x);
  append_slot(w.call.attributes, w.y);
  return w;
}

LoweringBody where_body(const Where& w) {
  return [c = w.condition, x = w.x, y = w.y, r = to_element_type(w.result)](
             hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_where(b, c.pick(t, s), x.pick(t, s), y.pick(t, s), r)};
  };
}

at::Tensor where_self(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other) {
  Where w = where_call(condition, self, other);
  return in_iterator_layout(run_op(w.call, where_body(w)).at(0), w.call.tensors);
}

at::Tensor& where_out(const at::Tensor& condition, const at::Tensor& self, const at::Tensor& other,
                      at::Tensor& out) {
  Where w = where_call(condition, self, other);
  TORCH_CHECK(out.scalar_type() == w.result, "Expected out type to be ", w.result, " but got ", out.scalar_type());
  prepare_out(out, at::infer_size(at::infer_size(condition.sizes(), self.sizes()), other.sizes()), false,
              {condition, self, other});
  run_op_into(w.call, where_body(w), out);
  return out;
}

// ---- clamp ----------------------------------------------------------------------------------

struct Clamp {
  OpCall call{"aten::clamp", "", {}, {}};
  std::optional<ArgSlot> lo, hi;
  ScalarType result;
  std::vector<int64_t> shape;
};

// Bool clamps only with a single tensor bound (CPU's maximum / minimum).
void check_clamp_dtype(ScalarType t, bool bool_ok) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(t), "clamp is not supported for complex types");
  if (t == ScalarType::Bool && !bool_ok) not_implemented_for("clamp", t);
}

Clamp clamp_scalar_call(const at::Tensor& self, const std::optional<c10::Scalar>& lo,
                        const std::optional<c10::Scalar>& hi) {
  TORCH_CHECK(lo.has_value() || hi.has_value(), "torch.clamp: At least one of 'min' or 'max' must not be None");
  at::native::ResultTypeState state;
  state = at::native::update_result_type_state(self, state);
  if (lo) state = at::native::update_result_type_state(*lo, state);
  if (hi) state = at::native::update_result_type_state(*hi, state);
  Clamp c;
  c.result = at::native::result_type(state);
  check_clamp_dtype(c.result, false);
  c.shape = self.sizes().vec();
  c.call.tensors.push_back(self);
  append_type(c.call.attributes, c.result);
  // Bounds convert with an overflow check, like CPU's kernel (Scalar::to).
  const ElementType e = to_element_type(c.result, c.call.name);
  if (lo) {
    c.call.scalars.push_back({e, *lo});
    c.lo = ArgSlot{true, c.call.scalars.size() - 1};
  }
  if (hi) {
    c.call.scalars.push_back({e, *hi});
    c.hi = ArgSlot{true, c.call.scalars.size() - 1};
  }
  c.call.attributes.push_back(lo ? 'l' : '-');
  c.call.attributes.push_back(hi ? 'h' : '-');
  return c;
}

Clamp clamp_tensor_call(const at::Tensor& self, const std::optional<at::Tensor>& lo,
                        const std::optional<at::Tensor>& hi) {
  const bool has_lo = lo.has_value() && lo->defined();
  const bool has_hi = hi.has_value() && hi->defined();
  TORCH_CHECK(has_lo || has_hi, "torch.clamp: At least one of 'min' or 'max' must not be None");
  at::native::ResultTypeState state;
  state = at::native::update_result_type_state(self, state);
  if (has_lo) state = at::native::update_result_type_state(*lo, state);
  if (has_hi) state = at::native::update_result_type_state(*hi, state);
  Clamp c;
  c.result = at::native::result_type(state);
  check_clamp_dtype(c.result, !(has_lo && has_hi));
  std::vector<int64_t> shape = self.sizes().vec();
  if (has_lo) shape = at::infer_size(shape, lo->sizes());
  if (has_hi) shape = at::infer_size(shape, hi->sizes());
  c.shape = shape;
  c.call.tensors.push_back(self);
  append_type(c.call.attributes, c.result);
  if (has_lo) c.lo = add_operand(c.call, *lo, c.result);
  if (has_hi) c.hi = add_operand(c.call, *hi, c.result);
  c.call.attributes.push_back(has_lo ? (c.lo->scalar ? 'L' : 'l') : '-');
  c.call.attributes.push_back(has_hi ? (c.hi->scalar ? 'H' : 'h') : '-');
  return c;
}

LoweringBody clamp_body(const Clamp& c) {
  return [lo = c.lo, hi = c.hi, r = to_element_type(c.result)](
             hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    std::optional<hlo::Value> l, h;
    if (lo) l = lo->pick(t, s);
    if (hi) h = hi->pick(t, s);
    return std::vector<hlo::Value>{ops::lower_clamp(b, t[0], l, h, r)};
  };
}

// Scalar bounds: out= must have the result dtype exactly (CPU's unary
// iterator); tensor bounds: out= casts.
at::Tensor& clamp_into(const Clamp& c, at::Tensor& out, bool inplace, bool exact) {
  if (inplace || !exact) {
    check_castable(c.result, out);
  } else {
    check_exact(c.result, out);
  }
  prepare_out(out, c.shape, inplace, c.call.tensors);
  run_op_into(c.call, clamp_body(c), out);
  return out;
}

using OptScalar = std::optional<c10::Scalar>;
using OptTensor = std::optional<at::Tensor>;

at::Tensor clamp_s(const at::Tensor& self, const OptScalar& lo, const OptScalar& hi) {
  Clamp c = clamp_scalar_call(self, lo, hi);
  return in_iterator_layout(run_op(c.call, clamp_body(c)).at(0), c.call.tensors);
}
at::Tensor& clamp_s_(at::Tensor& self, const OptScalar& lo, const OptScalar& hi) {
  return clamp_into(clamp_scalar_call(self, lo, hi), self, true, true);
}
at::Tensor& clamp_s_out(const at::Tensor& self, const OptScalar& lo, const OptScalar& hi, at::Tensor& out) {
  return clamp_into(clamp_scalar_call(self, lo, hi), out, false, true);
}
at::Tensor clamp_t(const at::Tensor& self, const OptTensor& lo, const OptTensor& hi) {
  Clamp c = clamp_tensor_call(self, lo, hi);
  return in_iterator_layout(run_op(c.call, clamp_body(c)).at(0), c.call.tensors);
}
at::Tensor& clamp_t_(at::Tensor& self, const OptTensor& lo, const OptTensor& hi) {
  return clamp_into(clamp_tensor_call(self, lo, hi), self, true, false);
}
at::Tensor& clamp_t_out(const at::Tensor& self, const OptTensor& lo, const OptTensor& hi, at::Tensor& out) {
  return clamp_into(clamp_tensor_call(self, lo, hi), out, false, false);
}

at::Tensor clamp_min(const at::Tensor& self, const c10::Scalar& lo) { return clamp_s(self, lo, std::nullopt); }
at::Tensor& clamp_min_(at::Tensor& self, const c10::Scalar& lo) { return clamp_s_(self, lo, std::nullopt); }
at::Tensor& clamp_min_out(const at::Tensor& self, const c10::Scalar& lo, at::Tensor& out) {
  return clamp_s_out(self, lo, std::nullopt, out);
}
at::Tensor clamp_min_t(const at::Tensor& self, const at::Tensor& lo) { return clamp_t(self, lo, std::nullopt); }
at::Tensor& clamp_min_t_(at::Tensor& self, const at::Tensor& lo) { return clamp_t_(self, lo, std::nullopt); }
at::Tensor& clamp_min_t_out(const at::Tensor& self, const at::Tensor& lo, at::Tensor& out) {
  return clamp_t_out(self, lo, std::nullopt, out);
}
at::Tensor clamp_max(const at::Tensor& self, const c10::Scalar& hi) { return clamp_s(self, std::nullopt, hi); }
at::Tensor& clamp_max_(at::Tensor& self, const c10::Scalar& hi) { return clamp_s_(self, std::nullopt, hi); }
at::Tensor& clamp_max_out(const at::Tensor& self, const c10::Scalar& hi, at::Tensor& out) {
  return clamp_s_out(self, std::nullopt, hi, out);
}
at::Tensor clamp_max_t(const at::Tensor& self, const at::Tensor& hi) { return clamp_t(self, std::nullopt, hi); }
at::Tensor& clamp_max_t_(at::Tensor& self, const at::Tensor& hi) { return clamp_t_(self, std::nullopt, hi); }
at::Tensor& clamp_max_t_out(const at::Tensor& self, const at::Tensor& hi, at::Tensor& out) {
  return clamp_t_out(self, std::nullopt, hi, out);
}

}  // namespace

#define TORCH_TPU_COMPARE(name, op)                                  \
  m.impl(name ".Tensor", compare_tensor<CompareOp::op>);             \
  m.impl(name ".Scalar", compare_scalar<CompareOp::op>);             \
  m.impl(name "_.Tensor", compare_tensor_<CompareOp::op>);           \
  m.impl(name "_.Scalar", compare_scalar_<CompareOp::op>);           \
  m.impl(name ".Tensor_out", compare_tensor_out<CompareOp::op>);     \
  m.impl(name ".Scalar_out", compare_scalar_out<CompareOp::op>);

#define TORCH_TPU_LOGICAL(name, op)                \
  m.impl(name, logical<LogicalOp::op>);            \
  m.impl(name "_", logical_<LogicalOp::op>);       \
  m.impl(name ".out", logical_out<LogicalOp::op>);

// The Scalar overloads of the bitwise ops are composites that call these
// with a wrapped CPU scalar.
#define TORCH_TPU_BITWISE(name, op)                        \
  m.impl(name ".Tensor", bitwise<LogicalOp::op>);          \
  m.impl(name "_.Tensor", bitwise_<LogicalOp::op>);        \
  m.impl(name ".Tensor_out", bitwise_out<LogicalOp::op>);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TORCH_TPU_COMPARE("eq", kEq)
  TORCH_TPU_COMPARE("ne", kNe)
  TORCH_TPU_COMPARE("lt", kLt)
  TORCH_TPU_COMPARE("le", kLe)
  TORCH_TPU_COMPARE("gt", kGt)
  TORCH_TPU_COMPARE("ge", kGe)
  TORCH_TPU_LOGICAL("logical_and", kAnd)
  TORCH_TPU_LOGICAL("logical_or", kOr)
  TORCH_TPU_LOGICAL("logical_xor", kXor)
  TORCH_TPU_BITWISE("bitwise_and", kAnd)
  TORCH_TPU_BITWISE("bitwise_or", kOr)
  TORCH_TPU_BITWISE("bitwise_xor", kXor)
  m.impl("where.self", where_self);
  m.impl("where.self_out", where_out);
  m.impl("clamp", clamp_s);
  m.impl("clamp_", clamp_s_);
  m.impl("clamp.out", clamp_s_out);
  m.impl("clamp.Tensor", clamp_t);
  m.impl("clamp_.Tensor", clamp_t_);
  m.impl("clamp.Tensor_out", clamp_t_out);
  m.impl("clamp_min", clamp_min);
  m.impl("clamp_min_", clamp_min_);
  m.impl("clamp_min.out", clamp_min_out);
  m.impl("clamp_min.Tensor", clamp_min_t);
  m.impl("clamp_min_.Tensor", clamp_min_t_);
  m.impl("clamp_min.Tensor_out", clamp_min_t_out);
  m.impl("clamp_max", clamp_max);
  m.impl("clamp_max_", clamp_max_);
  m.impl("clamp_max.out", clamp_max_out);
  m.impl("clamp_max.Tensor", clamp_max_t);
  m.impl("clamp_max_.Tensor", clamp_max_t_);
  m.impl("clamp_max.Tensor_out", clamp_max_t_out);
}

#undef TORCH_TPU_COMPARE
#undef TORCH_TPU_LOGICAL
#undef TORCH_TPU_BITWISE

}  // namespace torch_tpu::aten
