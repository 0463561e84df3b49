// ATen glue for the math ops beyond the basic unary set and + - * /:
// inverse / hyperbolic trigonometry, exp2, erfc, the gamma family, Bessel
// functions, sinc, entr, logit, and the binary ops atan2, hypot, logaddexp,
// xlogy, copysign, nextafter, heaviside, fmax / fmin, fmod, remainder,
// floor_divide, bit shifts, gcd / lcm, zeta, igamma / igammac and the
// orthogonal polynomials (special_chebyshev_polynomial_t, ...). Result dtypes and dtype
// errors follow the CPU kernels. Integer fmod / remainder / floor_divide by
// a zero tensor element raise CPU's "ZeroDivisionError" RuntimeError at the
// next sync (a deferred check); a zero scalar divisor raises at once.
// Lowerings: csrc/ops/elementwise/special.cc and binary_math.cc.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/mvlgamma_native.h>
#include <ATen/ops/result_type.h>
#include <c10/core/DefaultDtype.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/elementwise/binary_math.h"
#include "ops/elementwise/special.h"

namespace torch_tpu::aten {

namespace {

using c10::ScalarType;
using ops::BinaryMathOp;
using ops::SpecialOp;

ScalarType default_float() { return c10::typeMetaToScalarType(c10::get_default_dtype()); }

void reject_complex(ScalarType t, const char* op) {
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(t), op, ": complex tensors are not supported on tpu yet");
}

void append_type(std::string& attributes, ScalarType t) { attributes.push_back(static_cast<char>(t)); }

// ---- unary float ops --------------------------------------------------------------

const char* special_name(SpecialOp op) {
  switch (op) {
    case SpecialOp::kAsin: return "aten::asin";
    case SpecialOp::kAcos: return "aten::acos";
    case SpecialOp::kAtan: return "aten::atan";
    case SpecialOp::kSinh: return "aten::sinh";
    case SpecialOp::kCosh: return "aten::cosh";
    case SpecialOp::kAsinh: return "aten::asinh";
    case SpecialOp::kAcosh: return "aten::acosh";
    case SpecialOp::kAtanh: return "aten::atanh";
    case SpecialOp::kExp2: return "aten::exp2";
    case SpecialOp::kErfc: return "aten::erfc";
    case SpecialOp::kLgamma: return "aten::lgamma";
    case SpecialOp::kDigamma: return "aten::digamma";
    case SpecialOp::kI0: return "aten::i0";
    case SpecialOp::kI0e: return "aten::special_i0e";
    case SpecialOp::kI1: return "aten::special_i1";
    case SpecialOp::kI1e: return "aten::special_i1e";
    case SpecialOp::kSinc: return "aten::sinc";
    case SpecialOp::kEntr: return "aten::special_entr";
    case SpecialOp::kModifiedBesselI0: return "aten::special_modified_bessel_i0";
    case SpecialOp::kModifiedBesselI1: return "aten::special_modified_bessel_i1";
    case SpecialOp::kErfcx: return "aten::special_erfcx";
    case SpecialOp::kNdtri: return "aten::special_ndtri";
    case SpecialOp::kLogNdtr: return "aten::special_log_ndtr";
    case SpecialOp::kSphericalBesselJ0: return "aten::special_spherical_bessel_j0";
    case SpecialOp::kModifiedBesselK0: return "aten::special_modified_bessel_k0";
    case SpecialOp::kModifiedBesselK1: return "aten::special_modified_bessel_k1";
    case SpecialOp::kScaledModifiedBesselK0: return "aten::special_scaled_modified_bessel_k0";
    case SpecialOp::kScaledModifiedBesselK1: return "aten::special_scaled_modified_bessel_k1";
    case SpecialOp::kBesselJ0: return "aten::special_bessel_j0";
    case SpecialOp::kAiryAi: return "aten::special_airy_ai";
    case SpecialOp::kBesselJ1: return "aten::special_bessel_j1";
    case SpecialOp::kBesselY0: return "aten::special_bessel_y0";
    case SpecialOp::kBesselY1: return "aten::special_bessel_y1";
  }
  return "?";
}

// Integer and bool inputs compute in the default float dtype, like CPU.
ScalarType float_result(ScalarType in, const char* op) {
  if (c10::isComplexType(in)) not_implemented_for(op, in);  // as CPU's kernels
  return c10::isIntegralType(in, true) ? default_float() : in;
}

struct Unary {
  OpCall call;
  LoweringBody body;
  ScalarType result;
};

// torch.special's newer functions have CPU kernels for float and double
// only; their f16 / bf16 inputs raise the same NotImplementedError here.
bool float_and_double_only(SpecialOp op) { return op >= SpecialOp::kModifiedBesselI0; }

// The inverse trigonometric and hyperbolic functions, exp2 and sinc are
// defined on complex numbers too (as on CPU; CHLO lowers the former for
// complex operands).
bool complex_ok(SpecialOp op) {
  return (op >= SpecialOp::kAsin && op <= SpecialOp::kAtanh) || op == SpecialOp::kExp2 || op == SpecialOp::kSinc;
}

Unary special_call(SpecialOp op, const at::Tensor& self) {
  const char* name = special_name(op);
  const bool complex = c10::isComplexType(self.scalar_type()) && complex_ok(op);
  const ScalarType result = complex ? self.scalar_type() : float_result(self.scalar_type(), name);
  if (float_and_double_only(op) && (result == ScalarType::Half || result == ScalarType::BFloat16)) {
    const std::string kernel = std::string(name).substr(std::string("aten::special_").size()) + "_cpu";
    not_implemented_for(kernel.c_str(), result);
  }
  Unary u{OpCall{name, "", {self}, {}}, {}, result};
  u.call.attributes.push_back(static_cast<char>(op));
  append_type(u.call.attributes, result);
  u.body = [op, out = to_element_type(result, name)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                       const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_special(b, op, t[0], out)};
  };
  return u;
}

at::Tensor run_unary(const Unary& u) { return in_iterator_layout(run_op(u.call, u.body).at(0), u.call.tensors); }

at::Tensor& run_unary_into(const Unary& u, const at::Tensor& self, at::Tensor& out, bool inplace) {
  check_castable(u.result, out);
  prepare_out(out, self.sizes(), inplace, u.call.tensors);
  run_op_into(u.call, u.body, out);
  return out;
}

template <SpecialOp Op>
at::Tensor special_fn(const at::Tensor& self) {
  return run_unary(special_call(Op, self));
}
template <SpecialOp Op>
at::Tensor& special_(at::Tensor& self) {
  return run_unary_into(special_call(Op, self), self, self, true);
}
template <SpecialOp Op>
at::Tensor& special_out(const at::Tensor& self, at::Tensor& out) {
  return run_unary_into(special_call(Op, self), self, out, false);
}

// ---- polygamma ---------------------------------------------------------------------

Unary polygamma_call(int64_t n, const at::Tensor& self) {
  TORCH_CHECK(n >= 0, "polygamma(n, x) does not support negative n.");
  const ScalarType result = float_result(self.scalar_type(), "aten::polygamma");
  Unary u{OpCall{"aten::polygamma", std::to_string(n), {self}, {}}, {}, result};
  append_type(u.call.attributes, result);
  u.body = [n, out = to_element_type(result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_polygamma(b, n, t[0], out)};
  };
  return u;
}

at::Tensor polygamma(int64_t n, const at::Tensor& self) { return run_unary(polygamma_call(n, self)); }
at::Tensor& polygamma_out(int64_t n, const at::Tensor& self, at::Tensor& out) {
  return run_unary_into(polygamma_call(n, self), self, out, false);
}

// ---- logit ---------------------------------------------------------------------------

// eps travels as a runtime scalar of the result dtype (CPU converts it so).
// A negative eps means none (CPU's kernels test eps < 0).
std::optional<double> logit_eps(std::optional<double> eps) {
  return (eps && *eps >= 0) ? eps : std::nullopt;
}

Unary logit_call(const at::Tensor& self, std::optional<double> eps) {
  eps = logit_eps(eps);
  const ScalarType result = float_result(self.scalar_type(), "aten::logit");
  Unary u{OpCall{"aten::logit", eps ? "e" : "", {self}, {}}, {}, result};
  append_type(u.call.attributes, result);
  if (eps) u.call.scalars.push_back({to_element_type(result), cast_scalar(*eps, result)});
  u.body = [out = to_element_type(result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                           const std::vector<hlo::Value>& s) {
    std::optional<hlo::Value> e;
    if (!s.empty()) e = s[0];
    return std::vector<hlo::Value>{ops::lower_logit(b, t[0], e, out)};
  };
  return u;
}

at::Tensor logit(const at::Tensor& self, std::optional<double> eps) { return run_unary(logit_call(self, eps)); }
at::Tensor& logit_(at::Tensor& self, std::optional<double> eps) {
  return run_unary_into(logit_call(self, eps), self, self, true);
}
at::Tensor& logit_out(const at::Tensor& self, std::optional<double> eps, at::Tensor& out) {
  return run_unary_into(logit_call(self, eps), self, out, false);
}

Unary logit_backward_call(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps) {
  eps = logit_eps(eps);
  const ScalarType result = at::result_type(grad, self);
  reject_complex(result, "aten::logit_backward");
  if (!c10::isFloatingType(result)) not_implemented_for("logit_backward", result);
  Unary u{OpCall{"aten::logit_backward", eps ? "e" : "", {grad, self}, {}}, {}, result};
  append_type(u.call.attributes, result);
  if (eps) u.call.scalars.push_back({to_element_type(result), cast_scalar(*eps, result)});
  u.body = [out = to_element_type(result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                           const std::vector<hlo::Value>& s) {
    std::optional<hlo::Value> e;
    if (!s.empty()) e = s[0];
    return std::vector<hlo::Value>{ops::lower_logit_backward(b, t[0], t[1], e, out)};
  };
  return u;
}

at::Tensor logit_backward(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps) {
  return run_unary(logit_backward_call(grad, self, eps));
}
at::Tensor& logit_backward_out(const at::Tensor& grad, const at::Tensor& self, std::optional<double> eps,
                               at::Tensor& grad_input) {
  Unary u = logit_backward_call(grad, self, eps);
  check_castable(u.result, grad_input);
  prepare_out(grad_input, at::infer_size(grad.sizes(), self.sizes()), false, u.call.tensors);
  run_op_into(u.call, u.body, grad_input);
  return grad_input;
}

// ---- binary ops ----------------------------------------------------------------------

enum class Rule {
  kIntToFloat,  // integer and bool operands compute in the default float dtype
  kFloatOnly,   // floats only
  kAny,         // any real dtype
  kNoBool,      // integers and floats
  kInteger,     // integers only (not bool)
  kSameDtype,   // any real dtype, both operands of one dtype (heaviside)
  kIntToFloatOrDouble,  // as kIntToFloat, but no f16 / bf16 (CPU has float and double kernels only)
};

struct BinarySpec {
  const char* name;    // "aten::fmod"
  const char* kernel;  // CPU's kernel name in dtype errors
  Rule rule;
  bool zero_divisor_check;
  bool complex_ok = false;  // defined on complex numbers too (as on CPU)
};

BinarySpec binary_spec(BinaryMathOp op) {
  switch (op) {
    case BinaryMathOp::kAtan2: return {"aten::atan2", "atan2_cpu", Rule::kIntToFloat, false};
    case BinaryMathOp::kHypot: return {"aten::hypot", "hypot_cpu", Rule::kFloatOnly, false};
    case BinaryMathOp::kLogaddexp: return {"aten::logaddexp", "logaddexp_cpu", Rule::kFloatOnly, false, true};
    case BinaryMathOp::kLogaddexp2: return {"aten::logaddexp2", "logaddexp2_cpu", Rule::kFloatOnly, false};
    case BinaryMathOp::kXlogy: return {"aten::xlogy", "xlogy_cpu", Rule::kIntToFloat, false};
    case BinaryMathOp::kXlog1py: return {"aten::special_xlog1py", "xlog1py_cpu", Rule::kIntToFloat, false};
    case BinaryMathOp::kCopysign: return {"aten::copysign", "copysign_cpu", Rule::kIntToFloat, false};
    case BinaryMathOp::kNextafter: return {"aten::nextafter", "nextafter_cpu", Rule::kFloatOnly, false};
    case BinaryMathOp::kHeaviside: return {"aten::heaviside", "heaviside_cpu", Rule::kSameDtype, false};
    case BinaryMathOp::kFmax: return {"aten::fmax", "fmax_cpu", Rule::kAny, false};
    case BinaryMathOp::kFmin: return {"aten::fmin", "fmin_cpu", Rule::kAny, false};
    case BinaryMathOp::kFmod: return {"aten::fmod", "fmod_cpu", Rule::kNoBool, true};
    case BinaryMathOp::kRemainder: return {"aten::remainder", "remainder_cpu", Rule::kNoBool, true};
    case BinaryMathOp::kFloorDivide: return {"aten::floor_divide", "div_floor_cpu", Rule::kNoBool, true};
    case BinaryMathOp::kShiftLeft: return {"aten::bitwise_left_shift", "lshift_cpu", Rule::kInteger, false};
    case BinaryMathOp::kShiftRight: return {"aten::bitwise_right_shift", "rshift_cpu", Rule::kInteger, false};
    case BinaryMathOp::kGcd: return {"aten::gcd", "gcd_cpu", Rule::kInteger, false};
    case BinaryMathOp::kLcm: return {"aten::lcm", "lcm_cpu", Rule::kInteger, false};
    case BinaryMathOp::kZeta: return {"aten::special_zeta", "zeta_cpu", Rule::kIntToFloat, false};
    case BinaryMathOp::kIgamma: return {"aten::igamma", "igamma_cpu", Rule::kFloatOnly, false};
    case BinaryMathOp::kIgammac: return {"aten::igammac", "igammac_cpu", Rule::kFloatOnly, false};
    case BinaryMathOp::kChebyshevT:
      return {"aten::special_chebyshev_polynomial_t", "chebyshev_polynomial_t_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kChebyshevU:
      return {"aten::special_chebyshev_polynomial_u", "chebyshev_polynomial_u_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kChebyshevV:
      return {"aten::special_chebyshev_polynomial_v", "chebyshev_polynomial_v_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kChebyshevW:
      return {"aten::special_chebyshev_polynomial_w", "chebyshev_polynomial_w_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kShiftedChebyshevT:
      return {"aten::special_shifted_chebyshev_polynomial_t", "shifted_chebyshev_polynomial_t_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kShiftedChebyshevU:
      return {"aten::special_shifted_chebyshev_polynomial_u", "shifted_chebyshev_polynomial_u_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kShiftedChebyshevV:
      return {"aten::special_shifted_chebyshev_polynomial_v", "shifted_chebyshev_polynomial_v_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kShiftedChebyshevW:
      return {"aten::special_shifted_chebyshev_polynomial_w", "shifted_chebyshev_polynomial_w_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kHermiteH:
      return {"aten::special_hermite_polynomial_h", "hermite_polynomial_h_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kHermiteHe:
      return {"aten::special_hermite_polynomial_he", "hermite_polynomial_he_cpu", Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kLaguerreL:
      return {"aten::special_laguerre_polynomial_l", "laguerre_polynomial_l_cpu",
              Rule::kIntToFloatOrDouble, false};
    case BinaryMathOp::kLegendreP:
      return {"aten::special_legendre_polynomial_p", "legendre_polynomial_p_cpu",
              Rule::kIntToFloatOrDouble, false};
  }
  TORCH_INTERNAL_ASSERT(false, "unknown binary math op");
}

// One operand: a tensor (tpu, or a CPU 0-dim scalar) or a Python scalar.
struct Arg {
  const at::Tensor* tensor;
  c10::Scalar scalar;
  Arg(const at::Tensor& t) : tensor(&t) {}  // NOLINT: implicit by design
  Arg(const c10::Scalar& s) : tensor(nullptr), scalar(s) {}  // NOLINT
};

ScalarType promoted(const Arg& a, const Arg& b) {
  if (a.tensor && b.tensor) return at::result_type(*a.tensor, *b.tensor);
  if (a.tensor) return at::result_type(*a.tensor, b.scalar);
  if (b.tensor) return at::result_type(a.scalar, *b.tensor);
  return at::result_type(a.scalar, b.scalar);
}

ScalarType binary_result(const BinarySpec& s, const Arg& a, const Arg& b) {
  const ScalarType t = promoted(a, b);
  if (s.complex_ok && c10::isComplexType(t)) return t;
  if (c10::isComplexType(t)) {
    // CPU's messages: its own checks for these three, else its kernel's.
    const std::string name = s.name;
    TORCH_CHECK(name != "aten::heaviside", "heaviside is not yet implemented for complex tensors.");
    TORCH_CHECK(name != "aten::fmax" && name != "aten::fmin", name.substr(6), " not implemented for complex tensors.");
    not_implemented_for(s.kernel, t);
  }
  switch (s.rule) {
    case Rule::kIntToFloat:
      if (c10::isIntegralType(t, true)) return default_float();
      if (std::string(s.kernel) == "zeta_cpu" && (t == ScalarType::BFloat16 || t == ScalarType::Half)) {
        not_implemented_for(s.kernel, t);
      }
      return t;
    case Rule::kIntToFloatOrDouble:
      if (c10::isIntegralType(t, true)) return default_float();
      if (t == ScalarType::BFloat16 || t == ScalarType::Half) not_implemented_for(s.kernel, t);
      return t;
    case Rule::kFloatOnly:
      if (!c10::isFloatingType(t)) not_implemented_for(s.kernel, t);
      return t;
    case Rule::kAny: return t;
    case Rule::kNoBool:
      if (t == ScalarType::Bool) not_implemented_for(s.kernel, t);
      return t;
    case Rule::kInteger:
      if (!c10::isIntegralType(t, false)) not_implemented_for(s.kernel, t);
      return t;
    case Rule::kSameDtype:
      TORCH_CHECK(a.tensor && b.tensor && a.tensor->scalar_type() == b.tensor->scalar_type(),
                  "heaviside is not yet implemented for tensors with different dtypes.");
      return t;
  }
  return t;
}

std::vector<int64_t> result_shape(const Arg& a, const Arg& b) {
  if (a.tensor && b.tensor) return at::infer_size(a.tensor->sizes(), b.tensor->sizes());
  return (a.tensor ? a.tensor : b.tensor)->sizes().vec();
}

struct Binary {
  OpCall call;
  ArgSlot x, y;
  ScalarType result;
  std::vector<int64_t> shape;
  bool zero_flag = false;  // a second output: some integer divisor is zero
  ScalarType compute;      // result, or f32 (below)
};

ArgSlot add_binary_arg(OpCall& call, const Arg& a, ScalarType result) {
  if (a.tensor) return add_operand(call, *a.tensor, result);
  call.scalars.push_back({to_element_type(result, call.name), cast_scalar(a.scalar, result)});
  return {true, call.scalars.size() - 1};
}

Binary binary_call(BinaryMathOp op, const Arg& a, const Arg& b) {
  const BinarySpec s = binary_spec(op);
  Binary p{OpCall{s.name, "", {}, {}}, {}, {}, binary_result(s, a, b), result_shape(a, b)};
  // Reduced floats floor-divide in f32, a CPU scalar divisor included, as
  // CPU's and CUDA's div_floor kernels do (f16 1 // 0.1 is 9, not 10), the
  // same as torch.div(..., rounding_mode="floor").
  p.compute = op == BinaryMathOp::kFloorDivide ? opmath(p.result) : p.result;
  p.x = add_binary_arg(p.call, a, p.result);
  p.y = add_binary_arg(p.call, b, p.compute);
  if (s.zero_divisor_check && c10::isIntegralType(p.result, false)) {
    if (p.y.scalar) {
      TORCH_CHECK(p.call.scalars[p.y.index].value.toDouble() != 0, "ZeroDivisionError");
    } else {
      p.zero_flag = true;
    }
  }
  p.call.attributes.push_back(static_cast<char>(op));
  append_type(p.call.attributes, p.result);
  append_type(p.call.attributes, p.compute);
  append_slot(p.call.attributes, p.x);
  append_slot(p.call.attributes, p.y);
  p.call.attributes.push_back(p.zero_flag ? 'z' : '-');
  return p;
}

LoweringBody binary_body(BinaryMathOp op, const Binary& p) {
  return [op, x = p.x, y = p.y, flag = p.zero_flag, out = to_element_type(p.result),
          compute = to_element_type(p.compute)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                const std::vector<hlo::Value>& s) {
    const hlo::Value l = x.in_result_type(b, t, s, out);
    const hlo::Value r = y.in_result_type(b, t, s, out);
    std::vector<hlo::Value> results{ops::convert_to(b, ops::lower_binary_math(b, op, l, r, compute), out)};
    if (flag) {
      // only divisors that meet a dividend count (an empty result divides nothing)
      hlo::Value divisor = ops::broadcast_to(b, ops::convert_to(b, r, out), results[0].dims());
      results.push_back(ops::any_zero(b, divisor));
    }
    return results;
  };
}

at::Tensor binary(BinaryMathOp op, const Arg& a, const Arg& b) {
  Binary p = binary_call(op, a, b);
  std::vector<at::Tensor> outs = run_op(p.call, binary_body(op, p));
  if (p.zero_flag) defer_check(outs.at(1), CheckError::kRuntime, "ZeroDivisionError");
  return in_iterator_layout(outs.at(0), p.call.tensors);
}

at::Tensor& binary_into(BinaryMathOp op, const Arg& a, const Arg& b, at::Tensor& out, bool inplace) {
  Binary p = binary_call(op, a, b);
  check_castable(p.result, out);
  prepare_out(out, p.shape, inplace, p.call.tensors);
  if (!p.zero_flag) {
    run_op_into(p.call, binary_body(op, p), out);
    return out;
  }
  // The flag is a second output, which run_op_into cannot return.
  std::vector<at::Tensor> outs = run_op(p.call, binary_body(op, p));
  defer_check(outs.at(1), CheckError::kRuntime, "ZeroDivisionError");
  out.copy_(outs.at(0));
  return out;
}

template <BinaryMathOp Op>
at::Tensor binary_tt(const at::Tensor& self, const at::Tensor& other) {
  return binary(Op, self, other);
}
template <BinaryMathOp Op>
at::Tensor& binary_tt_(at::Tensor& self, const at::Tensor& other) {
  return binary_into(Op, self, other, self, true);
}
template <BinaryMathOp Op>
at::Tensor& binary_tt_out(const at::Tensor& self, const at::Tensor& other, at::Tensor& out) {
  return binary_into(Op, self, other, out, false);
}
template <BinaryMathOp Op>
at::Tensor binary_ts(const at::Tensor& self, const c10::Scalar& other) {
  return binary(Op, self, other);
}
template <BinaryMathOp Op>
at::Tensor& binary_ts_(at::Tensor& self, const c10::Scalar& other) {
  return binary_into(Op, self, other, self, true);
}
template <BinaryMathOp Op>
at::Tensor binary_st(const c10::Scalar& self, const at::Tensor& other) {
  return binary(Op, self, other);
}
template <BinaryMathOp Op>
at::Tensor& binary_st_out(const c10::Scalar& self, const at::Tensor& other, at::Tensor& out) {
  return binary_into(Op, self, other, out, false);
}

// heaviside's operands must share a dtype even when one is a CPU scalar.
at::Tensor heaviside(const at::Tensor& self, const at::Tensor& values) {
  return binary(BinaryMathOp::kHeaviside, self, values);
}

}  // namespace

#define TORCH_TPU_SPECIAL(name, op)         \
  m.impl(name, special_fn<SpecialOp::op>);  \
  m.impl(name "_", special_<SpecialOp::op>); \
  m.impl(name ".out", special_out<SpecialOp::op>);

#define TORCH_TPU_SPECIAL_NO_INPLACE(name, op) \
  m.impl(name, special_fn<SpecialOp::op>);     \
  m.impl(name ".out", special_out<SpecialOp::op>);

// name, name_, name.out on (Tensor, Tensor)
#define TORCH_TPU_BINARY(name, op)                     \
  m.impl(name, binary_tt<BinaryMathOp::op>);           \
  m.impl(name "_", binary_tt_<BinaryMathOp::op>);      \
  m.impl(name ".out", binary_tt_out<BinaryMathOp::op>);

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  // ATen's own out= form (mvlgamma_ and multigammaln(out=) reach it): the
  // functional mvlgamma is composite over tpu ops, then cast into out.
  m.impl("mvlgamma.out", TORCH_FN(at::native::mvlgamma_out));
  TORCH_TPU_SPECIAL("asin", kAsin)
  TORCH_TPU_SPECIAL("acos", kAcos)
  TORCH_TPU_SPECIAL("atan", kAtan)
  TORCH_TPU_SPECIAL("sinh", kSinh)
  TORCH_TPU_SPECIAL("cosh", kCosh)
  TORCH_TPU_SPECIAL("asinh", kAsinh)
  TORCH_TPU_SPECIAL("acosh", kAcosh)
  TORCH_TPU_SPECIAL("atanh", kAtanh)
  TORCH_TPU_SPECIAL("exp2", kExp2)
  TORCH_TPU_SPECIAL("erfc", kErfc)
  TORCH_TPU_SPECIAL("lgamma", kLgamma)
  TORCH_TPU_SPECIAL("digamma", kDigamma)
  TORCH_TPU_SPECIAL("i0", kI0)
  TORCH_TPU_SPECIAL("sinc", kSinc)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_i0e", kI0e)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_i1", kI1)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_i1e", kI1e)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_entr", kEntr)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_modified_bessel_i0", kModifiedBesselI0)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_modified_bessel_i1", kModifiedBesselI1)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_erfcx", kErfcx)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_ndtri", kNdtri)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_log_ndtr", kLogNdtr)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_spherical_bessel_j0", kSphericalBesselJ0)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_modified_bessel_k0", kModifiedBesselK0)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_modified_bessel_k1", kModifiedBesselK1)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_scaled_modified_bessel_k0", kScaledModifiedBesselK0)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_scaled_modified_bessel_k1", kScaledModifiedBesselK1)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_bessel_j0", kBesselJ0)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_airy_ai", kAiryAi)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_bessel_j1", kBesselJ1)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_bessel_y0", kBesselY0)
  TORCH_TPU_SPECIAL_NO_INPLACE("special_bessel_y1", kBesselY1)
  m.impl("polygamma", polygamma);
  m.impl("polygamma.out", polygamma_out);
  m.impl("logit", logit);
  m.impl("logit_", logit_);
  m.impl("logit.out", logit_out);
  m.impl("logit_backward", logit_backward);
  m.impl("logit_backward.grad_input", logit_backward_out);

  TORCH_TPU_BINARY("atan2", kAtan2)
  TORCH_TPU_BINARY("hypot", kHypot)
  TORCH_TPU_BINARY("nextafter", kNextafter)
  TORCH_TPU_BINARY("gcd", kGcd)
  TORCH_TPU_BINARY("igamma", kIgamma)
  TORCH_TPU_BINARY("igammac", kIgammac)
  TORCH_TPU_BINARY("lcm", kLcm)
  m.impl("heaviside", heaviside);
  m.impl("heaviside_", binary_tt_<BinaryMathOp::kHeaviside>);
  m.impl("heaviside.out", binary_tt_out<BinaryMathOp::kHeaviside>);
  m.impl("logaddexp", binary_tt<BinaryMathOp::kLogaddexp>);
  m.impl("logaddexp.out", binary_tt_out<BinaryMathOp::kLogaddexp>);
  m.impl("logaddexp2", binary_tt<BinaryMathOp::kLogaddexp2>);
  m.impl("logaddexp2.out", binary_tt_out<BinaryMathOp::kLogaddexp2>);
  m.impl("fmax", binary_tt<BinaryMathOp::kFmax>);
  m.impl("fmax.out", binary_tt_out<BinaryMathOp::kFmax>);
  m.impl("fmin", binary_tt<BinaryMathOp::kFmin>);
  m.impl("fmin.out", binary_tt_out<BinaryMathOp::kFmin>);
  m.impl("xlogy.Tensor", binary_tt<BinaryMathOp::kXlogy>);
  m.impl("xlogy_.Tensor", binary_tt_<BinaryMathOp::kXlogy>);
  m.impl("xlogy.OutTensor", binary_tt_out<BinaryMathOp::kXlogy>);
  m.impl("special_xlog1py", binary_tt<BinaryMathOp::kXlog1py>);
  m.impl("special_xlog1py.out", binary_tt_out<BinaryMathOp::kXlog1py>);
  m.impl("special_zeta", binary_tt<BinaryMathOp::kZeta>);
  m.impl("special_zeta.out", binary_tt_out<BinaryMathOp::kZeta>);
  m.impl("special_chebyshev_polynomial_t", binary_tt<BinaryMathOp::kChebyshevT>);
  m.impl("special_chebyshev_polynomial_t.out", binary_tt_out<BinaryMathOp::kChebyshevT>);
  m.impl("special_chebyshev_polynomial_u", binary_tt<BinaryMathOp::kChebyshevU>);
  m.impl("special_chebyshev_polynomial_u.out", binary_tt_out<BinaryMathOp::kChebyshevU>);
  m.impl("special_chebyshev_polynomial_v", binary_tt<BinaryMathOp::kChebyshevV>);
  m.impl("special_chebyshev_polynomial_v.out", binary_tt_out<BinaryMathOp::kChebyshevV>);
  m.impl("special_chebyshev_polynomial_w", binary_tt<BinaryMathOp::kChebyshevW>);
  m.impl("special_chebyshev_polynomial_w.out", binary_tt_out<BinaryMathOp::kChebyshevW>);
  m.impl("special_shifted_chebyshev_polynomial_t", binary_tt<BinaryMathOp::kShiftedChebyshevT>);
  m.impl("special_shifted_chebyshev_polynomial_t.out", binary_tt_out<BinaryMathOp::kShiftedChebyshevT>);
  m.impl("special_shifted_chebyshev_polynomial_u", binary_tt<BinaryMathOp::kShiftedChebyshevU>);
  m.impl("special_shifted_chebyshev_polynomial_u.out", binary_tt_out<BinaryMathOp::kShiftedChebyshevU>);
  m.impl("special_shifted_chebyshev_polynomial_v", binary_tt<BinaryMathOp::kShiftedChebyshevV>);
  m.impl("special_shifted_chebyshev_polynomial_v.out", binary_tt_out<BinaryMathOp::kShiftedChebyshevV>);
  m.impl("special_shifted_chebyshev_polynomial_w", binary_tt<BinaryMathOp::kShiftedChebyshevW>);
  m.impl("special_shifted_chebyshev_polynomial_w.out", binary_tt_out<BinaryMathOp::kShiftedChebyshevW>);
  m.impl("special_hermite_polynomial_h", binary_tt<BinaryMathOp::kHermiteH>);
  m.impl("special_hermite_polynomial_h.out", binary_tt_out<BinaryMathOp::kHermiteH>);
  m.impl("special_hermite_polynomial_he", binary_tt<BinaryMathOp::kHermiteHe>);
  m.impl("special_hermite_polynomial_he.out", binary_tt_out<BinaryMathOp::kHermiteHe>);
  m.impl("special_laguerre_polynomial_l", binary_tt<BinaryMathOp::kLaguerreL>);
  m.impl("special_laguerre_polynomial_l.out", binary_tt_out<BinaryMathOp::kLaguerreL>);
  m.impl("special_legendre_polynomial_p", binary_tt<BinaryMathOp::kLegendreP>);
  m.impl("special_legendre_polynomial_p.out", binary_tt_out<BinaryMathOp::kLegendreP>);
  m.impl("copysign.Tensor", binary_tt<BinaryMathOp::kCopysign>);
  m.impl("copysign_.Tensor", binary_tt_<BinaryMathOp::kCopysign>);
  m.impl("copysign.out", binary_tt_out<BinaryMathOp::kCopysign>);
  m.impl("fmod.Tensor", binary_tt<BinaryMathOp::kFmod>);
  m.impl("fmod_.Tensor", binary_tt_<BinaryMathOp::kFmod>);
  m.impl("fmod.Tensor_out", binary_tt_out<BinaryMathOp::kFmod>);
  m.impl("remainder.Tensor", binary_tt<BinaryMathOp::kRemainder>);
  m.impl("remainder_.Tensor", binary_tt_<BinaryMathOp::kRemainder>);
  m.impl("remainder.Tensor_out", binary_tt_out<BinaryMathOp::kRemainder>);
  m.impl("remainder.Scalar_Tensor", binary_st<BinaryMathOp::kRemainder>);
  m.impl("floor_divide", binary_tt<BinaryMathOp::kFloorDivide>);
  m.impl("floor_divide_.Tensor", binary_tt_<BinaryMathOp::kFloorDivide>);
  m.impl("floor_divide.out", binary_tt_out<BinaryMathOp::kFloorDivide>);
  m.impl("bitwise_left_shift.Tensor", binary_tt<BinaryMathOp::kShiftLeft>);
  m.impl("bitwise_left_shift_.Tensor", binary_tt_<BinaryMathOp::kShiftLeft>);
  m.impl("bitwise_left_shift.Tensor_out", binary_tt_out<BinaryMathOp::kShiftLeft>);
  m.impl("bitwise_right_shift.Tensor", binary_tt<BinaryMathOp::kShiftRight>);
  m.impl("bitwise_right_shift_.Tensor", binary_tt_<BinaryMathOp::kShiftRight>);
  m.impl("bitwise_right_shift.Tensor_out", binary_tt_out<BinaryMathOp::kShiftRight>);
  m.impl("__lshift__.Tensor", binary_tt<BinaryMathOp::kShiftLeft>);
  m.impl("__lshift__.Scalar", binary_ts<BinaryMathOp::kShiftLeft>);
  m.impl("__ilshift__.Tensor", binary_tt_<BinaryMathOp::kShiftLeft>);
  m.impl("__ilshift__.Scalar", binary_ts_<BinaryMathOp::kShiftLeft>);
  m.impl("__rshift__.Tensor", binary_tt<BinaryMathOp::kShiftRight>);
  m.impl("__rshift__.Scalar", binary_ts<BinaryMathOp::kShiftRight>);
  m.impl("__irshift__.Tensor", binary_tt_<BinaryMathOp::kShiftRight>);
  m.impl("__irshift__.Scalar", binary_ts_<BinaryMathOp::kShiftRight>);
}

#undef TORCH_TPU_SPECIAL
#undef TORCH_TPU_SPECIAL_NO_INPLACE
#undef TORCH_TPU_BINARY

}  // namespace torch_tpu::aten
