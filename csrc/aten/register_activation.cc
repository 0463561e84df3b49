// ATen glue for the activations (relu, threshold, gelu, silu, leaky_relu,
// hardtanh, softplus) and the backward ops autograd calls for them and for
// sigmoid / tanh. Scalars (threshold, slope, beta, bounds) are runtime
// inputs. Lowerings: csrc/ops/elementwise/activation.cc.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/result_type.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/elementwise/activation.h"
#include "ops/elementwise/compare.h"

namespace torch_tpu::aten {

namespace {

using c10::ScalarType;
using ops::GeluApproximation;

// ---- helpers (the shared ones are in aten/elementwise_args.h) -----------------
//
// Scalars pass through unchanged: like CPU's kernels (Scalar::to<T>), the
// runtime converts them with an overflow check.

// The functional, out= and in-place forms of one op, given its call.
struct Prepared {
  OpCall call;
  LoweringBody body;
  ScalarType result;
  std::vector<int64_t> shape;
};

enum class OutRule { kExact, kCastable };

at::Tensor run(const Prepared& p) { return in_iterator_layout(run_op(p.call, p.body).at(0), p.call.tensors); }

at::Tensor& run_into(const Prepared& p, at::Tensor& out, bool inplace, OutRule rule) {
  if (rule == OutRule::kExact && !inplace) {
    check_exact(p.result, out);
  } else {
    check_castable(p.result, out);
  }
  prepare_out(out, p.shape, inplace, p.call.tensors);
  run_op_into(p.call, p.body, out);
  return out;
}

void append_type(std::string& attributes, ScalarType t) { attributes.push_back(static_cast<char>(t)); }

// A backward op's result dtype and shape: grad and the saved tensor promote
// and broadcast together.
Prepared backward_call(const char* name, const at::Tensor& grad, const at::Tensor& saved) {
  check_tpu(grad, name);
  check_tpu(saved, name);
  Prepared p{OpCall{name, "", {grad, saved}, {}}, {}, at::result_type(grad, saved),
             at::infer_size(grad.sizes(), saved.sizes())};
  append_type(p.call.attributes, p.result);
  return p;
}

// ---- relu / threshold ----------------------------------------------------------------

Prepared relu_call(const at::Tensor& self) {
  TORCH_CHECK(self.scalar_type() != ScalarType::Bool, "Boolean inputs not supported for relu");
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(self.scalar_type()), "relu: complex tensors are not supported");
  Prepared p{OpCall{"aten::relu", "", {self}, {}}, {}, self.scalar_type(), self.sizes().vec()};
  p.body = [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_relu(b, t[0])};
  };
  return p;
}

at::Tensor relu(const at::Tensor& self) { return run(relu_call(self)); }
at::Tensor& relu_(at::Tensor& self) { return run_into(relu_call(self), self, true, OutRule::kExact); }

Prepared threshold_call(const at::Tensor& self, const c10::Scalar& threshold, const c10::Scalar& value) {
  const ScalarType t = self.scalar_type();
  if (t == ScalarType::Bool || c10::isComplexType(t)) not_implemented_for("threshold", t);
  const ElementType e = to_element_type(t, "aten::threshold");
  // The threshold in the opmath type (f32 for f16 / bf16), as CPU compares.
  Prepared p{OpCall{"aten::threshold", "", {self}, {{to_element_type(opmath(t)), threshold}, {e, value}}},
             {}, t, self.sizes().vec()};
  p.body = [](hlo::Builder& b, const std::vector<hlo::Value>& x, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_threshold(b, x[0], s[0], s[1])};
  };
  return p;
}

at::Tensor threshold(const at::Tensor& self, const c10::Scalar& th, const c10::Scalar& v) {
  return run(threshold_call(self, th, v));
}
at::Tensor& threshold_(at::Tensor& self, const c10::Scalar& th, const c10::Scalar& v) {
  return run_into(threshold_call(self, th, v), self, true, OutRule::kCastable);
}
at::Tensor& threshold_out(const at::Tensor& self, const c10::Scalar& th, const c10::Scalar& v, at::Tensor& out) {
  return run_into(threshold_call(self, th, v), out, false, OutRule::kCastable);
}

Prepared threshold_backward_call(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& threshold) {
  Prepared p = backward_call("aten::threshold_backward", grad, self);
  if (p.result == ScalarType::Bool || c10::isComplexType(p.result)) not_implemented_for("threshold", p.result);
  p.call.scalars.push_back({to_element_type(opmath(p.result)), threshold});
  p.body = [out = to_element_type(p.result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                               const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_threshold_backward(b, t[0], t[1], s[0], out)};
  };
  return p;
}

at::Tensor threshold_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& th) {
  return run(threshold_backward_call(grad, self, th));
}
at::Tensor& threshold_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& th,
                                   at::Tensor& grad_input) {
  return run_into(threshold_backward_call(grad, self, th), grad_input, false, OutRule::kCastable);
}

// ---- gelu ----------------------------------------------------------------------------

GeluApproximation gelu_approximation(c10::string_view approximate) {
  if (approximate == "none") return GeluApproximation::kNone;
  TORCH_CHECK(approximate == "tanh", "approximate argument must be either none or tanh.");
  return GeluApproximation::kTanh;
}

Prepared gelu_call(const at::Tensor& self, c10::string_view approximate) {
  const GeluApproximation a = gelu_approximation(approximate);
  check_float("GeluKernelImpl", self.scalar_type());
  Prepared p{OpCall{"aten::gelu", std::string(1, static_cast<char>(a)), {self}, {}}, {}, self.scalar_type(),
             self.sizes().vec()};
  p.body = [a](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_gelu(b, t[0], a)};
  };
  return p;
}

at::Tensor gelu(const at::Tensor& self, c10::string_view a) { return run(gelu_call(self, a)); }
at::Tensor& gelu_(at::Tensor& self, c10::string_view a) {
  return run_into(gelu_call(self, a), self, true, OutRule::kExact);
}
at::Tensor& gelu_out(const at::Tensor& self, c10::string_view a, at::Tensor& out) {
  return run_into(gelu_call(self, a), out, false, OutRule::kExact);
}

Prepared gelu_backward_call(const at::Tensor& grad, const at::Tensor& self, c10::string_view approximate) {
  const GeluApproximation a = gelu_approximation(approximate);
  Prepared p = backward_call("aten::gelu_backward", grad, self);
  check_float("GeluBackwardKernelImpl", p.result);
  p.call.attributes.push_back(static_cast<char>(a));
  p.body = [a, out = to_element_type(p.result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                  const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_gelu_backward(b, t[0], t[1], a, out)};
  };
  return p;
}

at::Tensor gelu_backward(const at::Tensor& grad, const at::Tensor& self, c10::string_view a) {
  return run(gelu_backward_call(grad, self, a));
}
at::Tensor& gelu_backward_out(const at::Tensor& grad, const at::Tensor& self, c10::string_view a,
                              at::Tensor& grad_input) {
  return run_into(gelu_backward_call(grad, self, a), grad_input, false, OutRule::kExact);
}

// ---- silu, sigmoid / tanh backward --------------------------------------------------------

Prepared silu_call(const at::Tensor& self) {
  if (!c10::isComplexType(self.scalar_type())) check_float("silu", self.scalar_type());
  Prepared p{OpCall{"aten::silu", "", {self}, {}}, {}, self.scalar_type(), self.sizes().vec()};
  p.body = [](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_silu(b, t[0])};
  };
  return p;
}

at::Tensor silu(const at::Tensor& self) { return run(silu_call(self)); }
at::Tensor& silu_(at::Tensor& self) { return run_into(silu_call(self), self, true, OutRule::kExact); }
at::Tensor& silu_out(const at::Tensor& self, at::Tensor& out) {
  return run_into(silu_call(self), out, false, OutRule::kExact);
}

enum class SavedBackward { kSilu, kSigmoid, kTanh };

Prepared saved_backward_call(SavedBackward op, const at::Tensor& grad, const at::Tensor& saved) {
  static const char* const kNames[] = {"aten::silu_backward", "aten::sigmoid_backward", "aten::tanh_backward"};
  const char* name = kNames[static_cast<int>(op)];
  Prepared p = backward_call(name, grad, saved);
  // silu, sigmoid and tanh are holomorphic: their backward takes complex values too.
  if (!c10::isComplexType(p.result)) check_float(name + 6, p.result);
  p.body = [op, out = to_element_type(p.result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                                   const std::vector<hlo::Value>&) {
    switch (op) {
      case SavedBackward::kSilu: return std::vector<hlo::Value>{ops::lower_silu_backward(b, t[0], t[1], out)};
      case SavedBackward::kSigmoid: return std::vector<hlo::Value>{ops::lower_sigmoid_backward(b, t[0], t[1], out)};
      case SavedBackward::kTanh: break;
    }
    return std::vector<hlo::Value>{ops::lower_tanh_backward(b, t[0], t[1], out)};
  };
  return p;
}

template <SavedBackward Op>
at::Tensor saved_backward(const at::Tensor& grad, const at::Tensor& saved) {
  return run(saved_backward_call(Op, grad, saved));
}
template <SavedBackward Op>
at::Tensor& saved_backward_out(const at::Tensor& grad, const at::Tensor& saved, at::Tensor& grad_input) {
  return run_into(saved_backward_call(Op, grad, saved), grad_input, false, OutRule::kCastable);
}

// ---- leaky_relu -------------------------------------------------------------------------

Prepared leaky_relu_call(const at::Tensor& self, const c10::Scalar& slope) {
  const ScalarType t = self.scalar_type();
  check_float("leaky_relu", t);
  Prepared p{OpCall{"aten::leaky_relu", "", {self}, {{to_element_type(opmath(t)), slope}}},
             {}, t, self.sizes().vec()};
  p.body = [](hlo::Builder& b, const std::vector<hlo::Value>& x, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_leaky_relu(b, x[0], s[0])};
  };
  return p;
}

at::Tensor leaky_relu(const at::Tensor& self, const c10::Scalar& slope) { return run(leaky_relu_call(self, slope)); }
at::Tensor& leaky_relu_(at::Tensor& self, const c10::Scalar& slope) {
  return run_into(leaky_relu_call(self, slope), self, true, OutRule::kExact);
}
at::Tensor& leaky_relu_out(const at::Tensor& self, const c10::Scalar& slope, at::Tensor& out) {
  return run_into(leaky_relu_call(self, slope), out, false, OutRule::kExact);
}

Prepared leaky_relu_backward_call(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                                  bool self_is_result) {
  TORCH_CHECK(!self_is_result || slope.to<double>() >= 0.0,
              "In-place leakyReLu backward calculation is triggered with a negative slope which is not supported. "
              "This is caused by calling in-place forward function with a negative slope, "
              "please call out-of-place version instead. File an issue at https://github.com/pytorch/pytorch if you "
              "do require supporting in-place leakRelu backward calculation with negative slope");
  Prepared p = backward_call("aten::leaky_relu_backward", grad, self);
  check_float("leaky_relu_backward", p.result);
  p.call.scalars.push_back({to_element_type(opmath(p.result)), slope});
  p.body = [out = to_element_type(p.result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                               const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_leaky_relu_backward(b, t[0], t[1], s[0], out)};
  };
  return p;
}

at::Tensor leaky_relu_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                               bool self_is_result) {
  return run(leaky_relu_backward_call(grad, self, slope, self_is_result));
}
at::Tensor& leaky_relu_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& slope,
                                    bool self_is_result, at::Tensor& grad_input) {
  return run_into(leaky_relu_backward_call(grad, self, slope, self_is_result), grad_input, false,
                  OutRule::kCastable);
}

// ---- hardtanh ----------------------------------------------------------------------------

Prepared hardtanh_call(const at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi) {
  const ScalarType t = self.scalar_type();
  TORCH_CHECK(t != ScalarType::Bool, "Bool inputs not supported for hardtanh");
  TORCH_CHECK_NOT_IMPLEMENTED(!c10::isComplexType(t), "hardtanh: complex tensors are not supported");
  if (c10::isIntegralType(t, false) && !c10::isSignedType(t)) {
    TORCH_CHECK(lo.toDouble() >= 0 && hi.toDouble() >= 0,
                "cannot do hardtanh on an unsigned type with negative limits");
  }
  const ElementType e = to_element_type(t, "aten::hardtanh");
  Prepared p{OpCall{"aten::hardtanh", "", {self}, {{e, lo}, {e, hi}}}, {}, t,
             self.sizes().vec()};
  p.body = [e](hlo::Builder& b, const std::vector<hlo::Value>& x, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_clamp(b, x[0], s[0], s[1], e)};
  };
  return p;
}

at::Tensor hardtanh(const at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi) {
  return run(hardtanh_call(self, lo, hi));
}
at::Tensor& hardtanh_(at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi) {
  return run_into(hardtanh_call(self, lo, hi), self, true, OutRule::kExact);
}
at::Tensor& hardtanh_out(const at::Tensor& self, const c10::Scalar& lo, const c10::Scalar& hi, at::Tensor& out) {
  return run_into(hardtanh_call(self, lo, hi), out, false, OutRule::kExact);
}

Prepared hardtanh_backward_call(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lo,
                                const c10::Scalar& hi) {
  Prepared p = backward_call("aten::hardtanh_backward", grad, self);
  check_float("hardtanh_backward", p.result);
  const ScalarType s = opmath(p.result);
  p.call.scalars.push_back({to_element_type(s), lo});
  p.call.scalars.push_back({to_element_type(s), hi});
  p.body = [out = to_element_type(p.result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                               const std::vector<hlo::Value>& sc) {
    return std::vector<hlo::Value>{ops::lower_hardtanh_backward(b, t[0], t[1], sc[0], sc[1], out)};
  };
  return p;
}

at::Tensor hardtanh_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lo,
                             const c10::Scalar& hi) {
  return run(hardtanh_backward_call(grad, self, lo, hi));
}
at::Tensor& hardtanh_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& lo,
                                  const c10::Scalar& hi, at::Tensor& grad_input) {
  return run_into(hardtanh_backward_call(grad, self, lo, hi), grad_input, false, OutRule::kCastable);
}

// ---- softplus ----------------------------------------------------------------------------

Prepared softplus_call(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& threshold) {
  const ScalarType t = self.scalar_type();
  check_float("softplus", t);
  const ScalarType s = opmath(t);
  Prepared p{OpCall{"aten::softplus", "", {self},
                    {{to_element_type(s), beta}, {to_element_type(s), threshold}}},
             {}, t, self.sizes().vec()};
  p.body = [](hlo::Builder& b, const std::vector<hlo::Value>& x, const std::vector<hlo::Value>& sc) {
    return std::vector<hlo::Value>{ops::lower_softplus(b, x[0], sc[0], sc[1])};
  };
  return p;
}

at::Tensor softplus(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& th) {
  return run(softplus_call(self, beta, th));
}
at::Tensor& softplus_out(const at::Tensor& self, const c10::Scalar& beta, const c10::Scalar& th, at::Tensor& out) {
  return run_into(softplus_call(self, beta, th), out, false, OutRule::kExact);
}

Prepared softplus_backward_call(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& beta,
                                const c10::Scalar& threshold) {
  Prepared p = backward_call("aten::softplus_backward", grad, self);
  check_float("softplus_backward", p.result);
  const ScalarType s = opmath(p.result);
  p.call.scalars.push_back({to_element_type(s), beta});
  p.call.scalars.push_back({to_element_type(s), threshold});
  p.body = [out = to_element_type(p.result)](hlo::Builder& b, const std::vector<hlo::Value>& t,
                                               const std::vector<hlo::Value>& sc) {
    return std::vector<hlo::Value>{ops::lower_softplus_backward(b, t[0], t[1], sc[0], sc[1], out)};
  };
  return p;
}

at::Tensor softplus_backward(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& beta,
                             const c10::Scalar& th) {
  return run(softplus_backward_call(grad, self, beta, th));
}
at::Tensor& softplus_backward_out(const at::Tensor& grad, const at::Tensor& self, const c10::Scalar& beta,
                                  const c10::Scalar& th, at::Tensor& grad_input) {
  return run_into(softplus_backward_call(grad, self, beta, th), grad_input, false, OutRule::kCastable);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("relu", relu);
  m.impl("relu_", relu_);
  m.impl("threshold", threshold);
  m.impl("threshold_", threshold_);
  m.impl("threshold.out", threshold_out);
  m.impl("threshold_backward", threshold_backward);
  m.impl("threshold_backward.grad_input", threshold_backward_out);
  m.impl("gelu", gelu);
  m.impl("gelu_", gelu_);
  m.impl("gelu.out", gelu_out);
  m.impl("gelu_backward", gelu_backward);
  m.impl("gelu_backward.grad_input", gelu_backward_out);
  m.impl("silu", silu);
  m.impl("silu_", silu_);
  m.impl("silu.out", silu_out);
  m.impl("silu_backward", saved_backward<SavedBackward::kSilu>);
  m.impl("silu_backward.grad_input", saved_backward_out<SavedBackward::kSilu>);
  m.impl("sigmoid_backward", saved_backward<SavedBackward::kSigmoid>);
  m.impl("sigmoid_backward.grad_input", saved_backward_out<SavedBackward::kSigmoid>);
  m.impl("tanh_backward", saved_backward<SavedBackward::kTanh>);
  m.impl("tanh_backward.grad_input", saved_backward_out<SavedBackward::kTanh>);
  m.impl("leaky_relu", leaky_relu);
  m.impl("leaky_relu_", leaky_relu_);
  m.impl("leaky_relu.out", leaky_relu_out);
  m.impl("leaky_relu_backward", leaky_relu_backward);
  m.impl("leaky_relu_backward.grad_input", leaky_relu_backward_out);
  m.impl("hardtanh", hardtanh);
  m.impl("hardtanh_", hardtanh_);
  m.impl("hardtanh.out", hardtanh_out);
  m.impl("hardtanh_backward", hardtanh_backward);
  m.impl("hardtanh_backward.grad_input", hardtanh_backward_out);
  m.impl("softplus", softplus);
  m.impl("softplus.out", softplus_out);
  m.impl("softplus_backward", softplus_backward);
  m.impl("softplus_backward.grad_input", softplus_backward_out);
}

}  // namespace torch_tpu::aten
