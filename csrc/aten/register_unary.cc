// ATen glue for the elementwise unary math ops, nan_to_num and pow: result
// dtypes like PyTorch's CPU kernels (integer inputs of float ops promote to
// the default float dtype), dtype errors like CPU, and the functional,
// in-place and out= forms, all calling the lowerings in
// csrc/ops/elementwise/unary.cc.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/result_type.h>
#include <ATen/ops/nan_to_num.h>
#include <ATen/ops/scalar_tensor.h>
#include <ATen/ops/view_as_complex.h>
#include <ATen/ops/view_as_real.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/ScalarType.h>
#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>
#include <torch/library.h>

#include <cmath>
#include <limits>
#include <optional>
#include <string>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/out_args.h"
#include "aten/result_layout.h"
#include "ops/elementwise/unary.h"

namespace torch_tpu::aten {

namespace {

using ops::UnaryOp;
using c10::ScalarType;

// ---- helpers shared by the forms ----------------------------------------------

ScalarType default_float() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

void reject_complex(ScalarType t, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(t), op, ": complex tensors are not supported on tpu yet");
}

void append_type(std::string& attributes, ScalarType t) { attributes.push_back(static_cast<char>(t)); }

// ---- unary ops ----------------------------------------------------------------

enum class Kind {
  kSame,       // result dtype = input dtype; out= must match exactly
  kFloat,      // integers promote to the default float dtype; out= casts
  kPredicate,  // bool result; out= of any dtype
  kBoolOut,    // bool result; out= must be bool
};

struct UnarySpec {
  const char* name;   // "aten::exp"
  const char* short_name;
  Kind kind;
  bool bool_ok, int_ok, float_ok;
};

UnarySpec spec(UnaryOp op) {
  switch (op) {
    case UnaryOp::kNeg: return {"aten::neg", "neg", Kind::kSame, false, true, true};
    case UnaryOp::kAbs: return {"aten::abs", "abs", Kind::kSame, false, true, true};
    case UnaryOp::kFloor: return {"aten::floor", "floor", Kind::kSame, false, true, true};
    case UnaryOp::kCeil: return {"aten::ceil", "ceil", Kind::kSame, false, true, true};
    case UnaryOp::kRound: return {"aten::round", "round", Kind::kSame, false, true, true};
    case UnaryOp::kTrunc: return {"aten::trunc", "trunc", Kind::kSame, false, true, true};
    case UnaryOp::kFrac: return {"aten::frac", "frac", Kind::kSame, false, false, true};
    case UnaryOp::kSign: return {"aten::sign", "sign", Kind::kSame, true, true, true};
    case UnaryOp::kSgn: return {"aten::sgn", "sgn", Kind::kSame, true, true, true};
    case UnaryOp::kBitwiseNot: return {"aten::bitwise_not", "bitwise_not", Kind::kSame, true, true, false};
    case UnaryOp::kExp: return {"aten::exp", "exp", Kind::kFloat, true, true, true};
    case UnaryOp::kExpm1: return {"aten::expm1", "expm1", Kind::kFloat, true, true, true};
    case UnaryOp::kLog: return {"aten::log", "log", Kind::kFloat, true, true, true};
    case UnaryOp::kLog1p: return {"aten::log1p", "log1p", Kind::kFloat, true, true, true};
    case UnaryOp::kLog2: return {"aten::log2", "log2", Kind::kFloat, true, true, true};
    case UnaryOp::kLog10: return {"aten::log10", "log10", Kind::kFloat, true, true, true};
    case UnaryOp::kSqrt: return {"aten::sqrt", "sqrt", Kind::kFloat, true, true, true};
    case UnaryOp::kRsqrt: return {"aten::rsqrt", "rsqrt", Kind::kFloat, true, true, true};
    case UnaryOp::kSin: return {"aten::sin", "sin", Kind::kFloat, true, true, true};
    case UnaryOp::kCos: return {"aten::cos", "cos", Kind::kFloat, true, true, true};
    case UnaryOp::kTan: return {"aten::tan", "tan", Kind::kFloat, true, true, true};
    case UnaryOp::kTanh: return {"aten::tanh", "tanh", Kind::kFloat, true, true, true};
    case UnaryOp::kSigmoid: return {"aten::sigmoid", "sigmoid", Kind::kFloat, true, true, true};
    case UnaryOp::kReciprocal: return {"aten::reciprocal", "reciprocal", Kind::kFloat, true, true, true};
    case UnaryOp::kErf: return {"aten::erf", "erf", Kind::kFloat, true, true, true};
    case UnaryOp::kErfinv: return {"aten::erfinv", "erfinv", Kind::kFloat, true, true, true};
    case UnaryOp::kLogicalNot: return {"aten::logical_not", "logical_not", Kind::kPredicate, true, true, true};
    case UnaryOp::kIsNan: return {"aten::isnan", "isnan", Kind::kPredicate, true, true, true};
    case UnaryOp::kIsInf: return {"aten::isinf", "isinf", Kind::kPredicate, true, true, true};
    case UnaryOp::kIsPosInf: return {"aten::isposinf", "isposinf", Kind::kBoolOut, true, true, true};
    case UnaryOp::kIsNegInf: return {"aten::isneginf", "isneginf", Kind::kBoolOut, true, true, true};
    case UnaryOp::kSignbit: return {"aten::signbit", "signbit", Kind::kBoolOut, true, true, true};
  }
  TORCH_INTERNAL_ASSERT(false, "unknown unary op");
}

// The result dtype of a complex input, or CPU's error for the ops PyTorch
// does not define on complex numbers.
ScalarType complex_result(UnaryOp op, const UnarySpec& s, ScalarType in) {
  switch (op) {
    case UnaryOp::kAbs: return c10::toRealValueType(in);
    case UnaryOp::kSign:
      TORCH_CHECK_NOT_IMPLEMENTED(false, "Unlike NumPy, torch.sign is not intended to support complex numbers. "
                                         "Please use torch.sgn instead.");
    case UnaryOp::kFloor:
    case UnaryOp::kCeil:
    case UnaryOp::kTrunc:
      TORCH_CHECK_NOT_IMPLEMENTED(false, s.short_name, " is not supported for complex inputs");
    case UnaryOp::kSignbit: TORCH_CHECK_NOT_IMPLEMENTED(false, "signbit is not implemented for complex tensors.");
    case UnaryOp::kIsPosInf:
    case UnaryOp::kIsNegInf: TORCH_CHECK(false, s.short_name, " does not support complex inputs.");
    case UnaryOp::kRound:
    case UnaryOp::kFrac:
    case UnaryOp::kErf:
    case UnaryOp::kErfinv:
    case UnaryOp::kBitwiseNot: not_implemented_for(s.short_name, in);
    default: break;
  }
  return s.kind == Kind::kPredicate ? ScalarType::Bool : in;
}

// The dtype of the result; raises CPU's error for unsupported input dtypes.
ScalarType unary_result(UnaryOp op, const UnarySpec& s, ScalarType in) {
  if (c10::isComplexType(in)) return complex_result(op, s, in);
  if (op == UnaryOp::kNeg && in == ScalarType::Bool) {
    TORCH_CHECK(false, "Negation, the `-` operator, on a bool tensor is not supported. "
                       "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  const bool ok = in == ScalarType::Bool ? s.bool_ok : c10::isIntegralType(in, false) ? s.int_ok : s.float_ok;
  if (!ok) not_implemented_for(s.short_name, in);
  switch (s.kind) {
    case Kind::kSame: return in;
    case Kind::kFloat: return c10::isIntegralType(in, true) ? default_float() : in;
    case Kind::kPredicate:
    case Kind::kBoolOut: return ScalarType::Bool;
  }
  return in;
}

OpCall unary_call(UnaryOp op, const UnarySpec& s, const at::Tensor& self, ScalarType compute) {
  OpCall call{s.name, "", {self}, {}};
  call.attributes.push_back(static_cast<char>(op));
  append_type(call.attributes, compute);
  return call;
}

LoweringBody unary_body(UnaryOp op, ElementType compute) {
  return [op, compute](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_unary(b, op, t[0], compute)};
  };
}

// The dtype the lowering computes in: the result's, except for predicates
// and complex inputs (which look at the input itself: abs of a complex value
// is real).
ScalarType compute_dtype(const UnarySpec& s, ScalarType in, ScalarType result) {
  return (s.kind == Kind::kPredicate || s.kind == Kind::kBoolOut || c10::isComplexType(in)) ? in : result;
}

at::Tensor unary(UnaryOp op, const at::Tensor& self) {
  const UnarySpec s = spec(op);
  const ScalarType result = unary_result(op, s, self.scalar_type());
  const ScalarType compute = compute_dtype(s, self.scalar_type(), result);
  const OpCall call = unary_call(op, s, self, compute);
  return in_iterator_layout(run_op(call, unary_body(op, to_element_type(compute, call.name))).at(0), call.tensors);
}

at::Tensor& unary_into(UnaryOp op, const at::Tensor& self, at::Tensor& out, bool inplace) {
  const UnarySpec s = spec(op);
  const ScalarType result = unary_result(op, s, self.scalar_type());
  TORCH_CHECK(!(inplace && result != self.scalar_type() && s.kind == Kind::kSame), "In-place ", s.short_name,
              " is not supported for complex tensors.");
  switch (s.kind) {
    case Kind::kSame:
      // abs of a complex value writes into a real or complex out=, as on CPU.
      if (result != self.scalar_type()) {
        check_castable(result, out);
      } else {
        check_exact(result, out);
      }
      break;
    case Kind::kFloat: check_castable(result, out); break;
    case Kind::kPredicate: break;
    case Kind::kBoolOut:
      TORCH_CHECK(out.scalar_type() == ScalarType::Bool, s.short_name, " does not support non-boolean outputs.");
      break;
  }
  prepare_out(out, self.sizes(), inplace, {self});
  const ScalarType compute = compute_dtype(s, self.scalar_type(), result);
  OpCall call = unary_call(op, s, self, compute);
  const LoweringBody body = unary_body(op, to_element_type(compute, call.name));
  run_op_into(call, body, out);
  return out;
}

template <UnaryOp Op>
at::Tensor functional(const at::Tensor& self) {
  return unary(Op, self);
}
template <UnaryOp Op>
at::Tensor& inplace(at::Tensor& self) {
  return unary_into(Op, self, self, true);
}
template <UnaryOp Op>
at::Tensor& out_form(const at::Tensor& self, at::Tensor& out) {
  return unary_into(Op, self, out, false);
}

// ---- round(decimals) ---------------------------------------------------------

ScalarType round_decimals_result(const at::Tensor& self) {
  reject_complex(self.scalar_type(), "aten::round");
  // CPU rounds to decimals only for floats, even for decimals=0.
  if (!c10::isFloatingType(self.scalar_type())) not_implemented_for("round", self.scalar_type());
  return self.scalar_type();
}

OpCall round_decimals_call(const at::Tensor& self, int64_t decimals) {
  OpCall call{"aten::round", "d", {self}, {}};
  call.attributes.append(std::to_string(decimals));
  return call;
}

LoweringBody round_decimals_body(int64_t decimals) {
  return [decimals](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_round_decimals(b, t[0], decimals)};
  };
}

at::Tensor round_decimals(const at::Tensor& self, int64_t decimals) {
  round_decimals_result(self);
  const OpCall call = round_decimals_call(self, decimals);
  return in_iterator_layout(run_op(call, round_decimals_body(decimals)).at(0), call.tensors);
}

at::Tensor& round_decimals_into(const at::Tensor& self, int64_t decimals, at::Tensor& out, bool inplace) {
  check_exact(round_decimals_result(self), out);
  prepare_out(out, self.sizes(), inplace, {self});
  run_op_into(round_decimals_call(self, decimals), round_decimals_body(decimals), out);
  return out;
}

at::Tensor round_decimals_fn(const at::Tensor& self, int64_t decimals) { return round_decimals(self, decimals); }
at::Tensor& round_decimals_(at::Tensor& self, int64_t decimals) {
  return round_decimals_into(self, decimals, self, true);
}
at::Tensor& round_decimals_out(const at::Tensor& self, int64_t decimals, at::Tensor& out) {
  return round_decimals_into(self, decimals, out, false);
}

// ---- nan_to_num ------------------------------------------------------------------

double largest(ScalarType t) {
  switch (t) {
    case ScalarType::Half: return static_cast<float>(std::numeric_limits<c10::Half>::max());
    case ScalarType::BFloat16: return static_cast<float>(std::numeric_limits<c10::BFloat16>::max());
    case ScalarType::Float: return std::numeric_limits<float>::max();
    case ScalarType::Float8_e5m2: return static_cast<float>(std::numeric_limits<c10::Float8_e5m2>::max());
    case ScalarType::Float8_e4m3fn: return static_cast<float>(std::numeric_limits<c10::Float8_e4m3fn>::max());
    case ScalarType::Float8_e5m2fnuz: return static_cast<float>(std::numeric_limits<c10::Float8_e5m2fnuz>::max());
    case ScalarType::Float8_e4m3fnuz: return static_cast<float>(std::numeric_limits<c10::Float8_e4m3fnuz>::max());
    default: return std::numeric_limits<double>::max();
  }
}

OpCall nan_to_num_call(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                       std::optional<double> neginf) {
  const ScalarType t = self.scalar_type();
  OpCall call{"aten::nan_to_num", "", {self}, {}};
  if (!c10::isFloatingType(t)) return call;  // nothing to replace
  const ElementType e = to_element_type(t, call.name);
  call.scalars.push_back({e, cast_scalar(nan.value_or(0.0), t)});
  call.scalars.push_back({e, cast_scalar(posinf.value_or(largest(t)), t)});
  call.scalars.push_back({e, cast_scalar(neginf.value_or(-largest(t)), t)});
  return call;
}

std::vector<hlo::Value> nan_to_num_lowering(hlo::Builder& b, const std::vector<hlo::Value>& t,
                                            const std::vector<hlo::Value>& s) {
  if (s.empty()) return {t[0]};
  return {ops::lower_nan_to_num(b, t[0], s[0], s[1], s[2])};
}

// Complex: the real and imaginary parts are replaced apart, as on CPU.
at::Tensor complex_nan_to_num(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                              std::optional<double> neginf) {
  at::Tensor parts = at::view_as_real(self.resolve_conj());
  return at::view_as_complex(at::nan_to_num(parts, nan, posinf, neginf).contiguous());
}

at::Tensor nan_to_num(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                      std::optional<double> neginf) {
  if (self.is_complex()) return complex_nan_to_num(self, nan, posinf, neginf);
  const OpCall call = nan_to_num_call(self, nan, posinf, neginf);
  return in_iterator_layout(run_op(call, nan_to_num_lowering).at(0), call.tensors);
}

at::Tensor& nan_to_num_into(const at::Tensor& self, std::optional<double> nan, std::optional<double> posinf,
                            std::optional<double> neginf, at::Tensor& out, bool inplace) {
  TORCH_CHECK(out.scalar_type() == self.scalar_type(), "nan_to_num: dtype of out: ", out.scalar_type(),
              " should be same as input: ", self.scalar_type());
  if (self.is_complex()) {
    const at::Tensor value = complex_nan_to_num(self, nan, posinf, neginf);
    if (inplace) return out.copy_(value);
    return write_out(out, value);
  }
  prepare_out(out, self.sizes(), inplace, {self});
  if (inplace && !c10::isFloatingType(self.scalar_type())) return out;  // nothing to replace
  run_op_into(nan_to_num_call(self, nan, posinf, neginf), nan_to_num_lowering, out);
  return out;
}

at::Tensor& nan_to_num_(at::Tensor& self, std::optional<double> n, std::optional<double> p,
                        std::optional<double> m) {
  return nan_to_num_into(self, n, p, m, self, true);
}
at::Tensor& nan_to_num_out(const at::Tensor& self, std::optional<double> n, std::optional<double> p,
                           std::optional<double> m, at::Tensor& out) {
  return nan_to_num_into(self, n, p, m, out, false);
}

// ---- pow ----------------------------------------------------------------------------

void check_pow_dtype(ScalarType t) {
  if (t == ScalarType::Bool) not_implemented_for("pow", t);
}

// The dtype a runtime scalar operand of pow travels in: the result's, or
// for a complex pow (whose scalar is real) its real type; the program
// converts it.
ScalarType pow_scalar_type(ScalarType result) { return c10::toRealValueType(result); }

// pow(Tensor, Tensor); either may be a CPU 0-dim tensor.
struct PowTensorCall {
  OpCall call{"aten::pow", "T", {}, {}};
  ArgSlot base, exponent;
  ScalarType result;
};

PowTensorCall pow_tensor_call(const at::Tensor& self, const at::Tensor& exponent, ScalarType result) {
  PowTensorCall p;
  p.result = result;
  p.base = add_operand(p.call, self, result);
  p.exponent = add_operand(p.call, exponent, result);
  append_type(p.call.attributes, result);
  append_slot(p.call.attributes, p.base);
  append_slot(p.call.attributes, p.exponent);
  return p;
}

LoweringBody pow_tensor_body(const PowTensorCall& p) {
  return [x = p.base, y = p.exponent, out = to_element_type(p.result, p.call.name)](
             hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{
        ops::lower_pow(b, x.in_result_type(b, t, s, out), y.in_result_type(b, t, s, out), out)};
  };
}

at::Tensor pow_tensor_tensor(const at::Tensor& self, const at::Tensor& exponent) {
  const ScalarType result = at::result_type(self, exponent);
  check_pow_dtype(result);
  at::infer_size(self.sizes(), exponent.sizes());  // CPU's error for shapes that don't broadcast
  PowTensorCall p = pow_tensor_call(self, exponent, result);
  return in_iterator_layout(run_op(p.call, pow_tensor_body(p)).at(0), p.call.tensors);
}

at::Tensor& pow_tensor_tensor_into(const at::Tensor& self, const at::Tensor& exponent, at::Tensor& out,
                                   bool inplace) {
  const ScalarType result = at::result_type(self, exponent);
  check_pow_dtype(result);
  check_castable(result, out);
  prepare_out(out, at::infer_size(self.sizes(), exponent.sizes()), inplace, {self, exponent});
  PowTensorCall p = pow_tensor_call(self, exponent, result);
  run_op_into(p.call, pow_tensor_body(p), out);
  return out;
}

// A complex Python number as a 0-dim CPU tensor marked as a wrapped number:
// type promotion treats it as a scalar (float tensor ** 1j is complex64),
// and pow(Tensor, Tensor) takes it as a runtime scalar.
at::Tensor wrapped_complex(const c10::Scalar& s) {
  at::Tensor t = at::scalar_tensor(s, at::TensorOptions().dtype(at::kComplexDouble));
  t.unsafeGetTensorImpl()->set_wrapped_number(true);
  return t;
}

// pow(Tensor, Scalar): the exponents PyTorch special-cases are baked into
// the program (they compute without pow); any other travels as a runtime
// scalar, so a changing exponent does not recompile.
struct PowScalarCall {
  OpCall call{"aten::pow", "S", {}, {}};
  ScalarType result;
  std::optional<double> special;
};

PowScalarCall pow_scalar_call(const at::Tensor& self, const c10::Scalar& exponent) {
  PowScalarCall p;
  p.result = at::result_type(self, exponent);
  // (A complex exponent gets here only with a zero imaginary part.)
  const double e = exponent.isComplex() ? exponent.toComplexDouble().real() : exponent.toDouble();
  if (c10::isIntegralType(p.result, true) && exponent.isIntegral(true)) {
    TORCH_CHECK(e >= 0, "Integers to negative integer powers are not allowed.");
  }
  if (p.result == ScalarType::Bool && e != 0 && e != 1) not_implemented_for("pow", p.result);
  // CPU's kernel converts the exponent with c10's checked conversion, which
  // refuses a finite value beyond a 16-bit float's range (float32 rounds).
  if (p.result == ScalarType::Half) (void)exponent.to<at::Half>();
  if (p.result == ScalarType::BFloat16) (void)exponent.to<at::BFloat16>();
  p.call.tensors.push_back(self);
  append_type(p.call.attributes, p.result);
  if (ops::is_special_pow_exponent(e) && (e == 0 || e == 1 || e == 2 || e == 3 || c10::isFloatingType(p.result) ||
                                          c10::isComplexType(p.result))) {
    p.special = e;
    p.call.attributes.append(std::to_string(e));
  } else {
    // The exponent is converted to the result dtype first, as CUDA's kernel
    // converts it: with an overflow check for integers, rounding (to inf at
    // worst) for floats. CPU keeps a float32 or bfloat16 tensor's exponent in
    // double (docs/status.md: pow(-1., 16777217.) is 1 here, -1 there).
    const ScalarType t = pow_scalar_type(p.result);
    p.call.scalars.push_back(
        {to_element_type(t, "aten::pow"), c10::isFloatingType(t) ? cast_scalar(exponent, t) : exponent});
  }
  return p;
}

LoweringBody pow_scalar_body(const PowScalarCall& p) {
  return [special = p.special, out = to_element_type(p.result, p.call.name)](
             hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    if (special) return std::vector<hlo::Value>{ops::lower_pow_special(b, t[0], *special, out)};
    return std::vector<hlo::Value>{ops::lower_pow(b, t[0], s[0], out)};
  };
}

// CPU computes a power whose exponent is one of the special values (a
// complex one included, when its imaginary part is 0) without pow: z ** 2
// as z * z, z ** 0.5 as sqrt(z), exactly where the polar form is not.
bool general_complex_exponent(const c10::Scalar& exponent) {
  if (!exponent.isComplex()) return false;
  const auto e = exponent.toComplexDouble();
  return e.imag() != 0 || !ops::is_special_pow_exponent(e.real());
}

at::Tensor pow_tensor_scalar(const at::Tensor& self, const c10::Scalar& exponent) {
  if (general_complex_exponent(exponent)) return pow_tensor_tensor(self, wrapped_complex(exponent));
  PowScalarCall p = pow_scalar_call(self, exponent);
  return in_iterator_layout(run_op(p.call, pow_scalar_body(p)).at(0), p.call.tensors);
}

at::Tensor& pow_tensor_scalar_into(const at::Tensor& self, const c10::Scalar& exponent, at::Tensor& out,
                                   bool inplace) {
  if (general_complex_exponent(exponent)) return pow_tensor_tensor_into(self, wrapped_complex(exponent), out, inplace);
  PowScalarCall p = pow_scalar_call(self, exponent);
  check_castable(p.result, out);
  prepare_out(out, self.sizes(), inplace, {self});
  run_op_into(p.call, pow_scalar_body(p), out);
  return out;
}

// pow(Scalar, Tensor): the base is a runtime scalar, cast to the result
// dtype like CPU's wrapped number.
PowTensorCall pow_base_call(const c10::Scalar& base, const at::Tensor& exponent, ScalarType result) {
  PowTensorCall p;
  p.call.attributes = "B";
  p.result = result;
  const ScalarType t = pow_scalar_type(result);
  p.call.scalars.push_back({to_element_type(t, "aten::pow"), cast_scalar(base, t)});
  p.base = {true, 0};
  p.exponent = add_arg(p.call, exponent, to_element_type(result, "aten::pow"));
  append_type(p.call.attributes, result);
  return p;
}

ScalarType pow_base_result(const c10::Scalar& base, const at::Tensor& exponent) {
  const ScalarType result = at::result_type(base, exponent);
  check_pow_dtype(result);
  return result;
}

at::Tensor pow_scalar_base(const c10::Scalar& base, const at::Tensor& exponent) {
  if (base.isComplex()) return pow_tensor_tensor(wrapped_complex(base), exponent);
  PowTensorCall p = pow_base_call(base, exponent, pow_base_result(base, exponent));
  return in_iterator_layout(run_op(p.call, pow_tensor_body(p)).at(0), p.call.tensors);
}

at::Tensor& pow_scalar_base_out(const c10::Scalar& base, const at::Tensor& exponent, at::Tensor& out) {
  if (base.isComplex()) return pow_tensor_tensor_into(wrapped_complex(base), exponent, out, false);
  const ScalarType result = pow_base_result(base, exponent);
  check_castable(result, out);
  prepare_out(out, exponent.sizes(), false, {exponent});
  PowTensorCall p = pow_base_call(base, exponent, result);
  run_op_into(p.call, pow_tensor_body(p), out);
  return out;
}

at::Tensor& pow_tt_(at::Tensor& self, const at::Tensor& e) { return pow_tensor_tensor_into(self, e, self, true); }
at::Tensor& pow_tt_out(const at::Tensor& self, const at::Tensor& e, at::Tensor& out) {
  return pow_tensor_tensor_into(self, e, out, false);
}
at::Tensor& pow_ts_(at::Tensor& self, const c10::Scalar& e) { return pow_tensor_scalar_into(self, e, self, true); }
at::Tensor& pow_ts_out(const at::Tensor& self, const c10::Scalar& e, at::Tensor& out) {
  return pow_tensor_scalar_into(self, e, out, false);
}

}  // namespace

#define TORCH_TPU_UNARY(name, op)                  \
  m.impl(name, functional<UnaryOp::op>);           \
  m.impl(name "_", inplace<UnaryOp::op>);          \
  m.impl(name ".out", out_form<UnaryOp::op>);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  TORCH_TPU_UNARY("neg", kNeg)
  TORCH_TPU_UNARY("abs", kAbs)
  TORCH_TPU_UNARY("floor", kFloor)
  TORCH_TPU_UNARY("ceil", kCeil)
  TORCH_TPU_UNARY("round", kRound)
  TORCH_TPU_UNARY("trunc", kTrunc)
  TORCH_TPU_UNARY("frac", kFrac)
  TORCH_TPU_UNARY("sign", kSign)
  TORCH_TPU_UNARY("sgn", kSgn)
  TORCH_TPU_UNARY("bitwise_not", kBitwiseNot)
  TORCH_TPU_UNARY("exp", kExp)
  TORCH_TPU_UNARY("expm1", kExpm1)
  TORCH_TPU_UNARY("log", kLog)
  TORCH_TPU_UNARY("log1p", kLog1p)
  TORCH_TPU_UNARY("log2", kLog2)
  TORCH_TPU_UNARY("log10", kLog10)
  TORCH_TPU_UNARY("sqrt", kSqrt)
  TORCH_TPU_UNARY("rsqrt", kRsqrt)
  TORCH_TPU_UNARY("sin", kSin)
  TORCH_TPU_UNARY("cos", kCos)
  TORCH_TPU_UNARY("tan", kTan)
  TORCH_TPU_UNARY("tanh", kTanh)
  TORCH_TPU_UNARY("sigmoid", kSigmoid)
  TORCH_TPU_UNARY("reciprocal", kReciprocal)
  TORCH_TPU_UNARY("erf", kErf)
  TORCH_TPU_UNARY("erfinv", kErfinv)
  TORCH_TPU_UNARY("logical_not", kLogicalNot)
  m.impl("isnan", functional<UnaryOp::kIsNan>);
  m.impl("isinf", functional<UnaryOp::kIsInf>);
  m.impl("isposinf", functional<UnaryOp::kIsPosInf>);
  m.impl("isposinf.out", out_form<UnaryOp::kIsPosInf>);
  m.impl("isneginf", functional<UnaryOp::kIsNegInf>);
  m.impl("isneginf.out", out_form<UnaryOp::kIsNegInf>);
  m.impl("signbit", functional<UnaryOp::kSignbit>);
  m.impl("signbit.out", out_form<UnaryOp::kSignbit>);
  m.impl("round.decimals", round_decimals_fn);
  m.impl("round_.decimals", round_decimals_);
  m.impl("round.decimals_out", round_decimals_out);
  m.impl("nan_to_num", nan_to_num);
  m.impl("nan_to_num_", nan_to_num_);
  m.impl("nan_to_num.out", nan_to_num_out);
  m.impl("pow.Tensor_Tensor", pow_tensor_tensor);
  m.impl("pow_.Tensor", pow_tt_);
  m.impl("pow.Tensor_Tensor_out", pow_tt_out);
  m.impl("pow.Tensor_Scalar", pow_tensor_scalar);
  m.impl("pow_.Scalar", pow_ts_);
  m.impl("pow.Tensor_Scalar_out", pow_ts_out);
  m.impl("pow.Scalar", pow_scalar_base);
  m.impl("pow.Scalar_out", pow_scalar_base_out);
}

#undef TORCH_TPU_UNARY

}  // namespace torch_tpu::aten
