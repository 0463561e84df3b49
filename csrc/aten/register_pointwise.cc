// ATen glue for lerp, addcmul, addcdiv, maximum and minimum (the pointwise
// ops optimizers use besides add/mul/div): functional, in-place and out=.
#include <ATen/ExpandUtils.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/TypeProperties.h>
#include <ATen/ops/result_type.h>
#include <torch/library.h>

#include <functional>

#include "aten/dtypes.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "ops/broadcast.h"
#include "ops/elementwise/pointwise.h"

namespace torch_tpu::aten {

namespace {

// One argument of a pointwise op: a tensor (tpu, or a CPU 0-dim scalar) or a
// Python scalar that travels as a runtime input.
struct Arg {
  const at::Tensor* tensor = nullptr;
  c10::Scalar scalar;
};

using Lower = std::function<hlo::Value(hlo::Builder&, const std::vector<hlo::Value>&, ElementType)>;

struct Call {
  OpCall op;
  std::vector<ArgSlot> slots;
  ElementType out;
  // f32 for reduced floats (f16, bf16): CPU's and CUDA's kernels compute
  // these ops in their opmath type, scalars included, and round once.
  ElementType compute;
};

Call prepare(const char* name, const std::vector<Arg>& args, c10::ScalarType dtype) {
  Call c{OpCall{name, "", {}, {}}, {}, to_element_type(dtype, name), to_element_type(opmath(dtype), name)};
  for (const Arg& a : args) {
    if (a.tensor) {
      c.slots.push_back(add_arg(c.op, *a.tensor, c.compute));
    } else {
      c.op.scalars.push_back({c.compute, a.scalar});
      c.slots.push_back({true, c.op.scalars.size() - 1});
    }
    append_slot(c.op.attributes, c.slots.back());
  }
  c.op.attributes.push_back(static_cast<char>(c.out));
  c.op.attributes.push_back(static_cast<char>(c.compute));
  return c;
}

LoweringBody body_of(const Call& c, Lower lower) {
  return [slots = c.slots, out = c.out, compute = c.compute, lower](
             hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>& s) {
    std::vector<hlo::Value> values;
    for (const ArgSlot& slot : slots) values.push_back(slot.in_result_type(b, t, s, out));
    return std::vector<hlo::Value>{ops::convert_to(b, lower(b, values, compute), out)};
  };
}

std::vector<int64_t> broadcast_shape(const std::vector<Arg>& args) {
  std::vector<int64_t> shape;
  for (const Arg& a : args) {
    if (a.tensor) shape = at::infer_size(shape, a.tensor->sizes());
  }
  return shape;
}

at::Tensor functional(const char* name, const std::vector<Arg>& args, c10::ScalarType dtype, Lower lower) {
  Call c = prepare(name, args, dtype);
  return in_iterator_layout(run_op(c.op, body_of(c, std::move(lower))).at(0), c.op.tensors);
}

at::Tensor& into(const char* name, const std::vector<Arg>& args, c10::ScalarType dtype, Lower lower,
                 at::Tensor& out, bool inplace) {
  TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), "result type ", dtype,
              " can't be cast to the desired output type ", out.scalar_type());
  const auto shape = broadcast_shape(args);
  Call c = prepare(name, args, dtype);
  prepare_out(out, shape, inplace, c.op.tensors);
  run_op_into(c.op, body_of(c, std::move(lower)), out);
  return out;
}

c10::ScalarType promote(std::initializer_list<const at::Tensor*> tensors) {
  at::native::ResultTypeState state;
  for (const at::Tensor* x : tensors) state = at::native::update_result_type_state(*x, state);
  return at::native::result_type(state);
}

// lerp takes no type promotion: CPU requires matching dtypes.
c10::ScalarType lerp_dtype(const at::Tensor& s, const at::Tensor& e, const at::Tensor* w = nullptr) {
  TORCH_CHECK(s.scalar_type() == e.scalar_type(), "expected dtype ", s.scalar_type(),
              " for `end` but got dtype ", e.scalar_type());
  if (w) {
    TORCH_CHECK(s.scalar_type() == w->scalar_type(), "expected dtype ", s.scalar_type(),
                " for `weight` but got dtype ", w->scalar_type());
  }
  return s.scalar_type();
}

// ---- lerp ----
const Lower kLerp = [](hlo::Builder& b, const std::vector<hlo::Value>& v, ElementType out) {
  return ops::lower_lerp(b, v[0], v[1], v[2], out);
};
at::Tensor lerp_scalar(const at::Tensor& s, const at::Tensor& e, const c10::Scalar& w) {
  return functional("aten::lerp", {{&s}, {&e}, {nullptr, w}}, lerp_dtype(s, e), kLerp);
}
at::Tensor lerp_tensor(const at::Tensor& s, const at::Tensor& e, const at::Tensor& w) {
  return functional("aten::lerp", {{&s}, {&e}, {&w}}, lerp_dtype(s, e, &w), kLerp);
}
at::Tensor& lerp_scalar_(at::Tensor& s, const at::Tensor& e, const c10::Scalar& w) {
  return into("aten::lerp", {{&s}, {&e}, {nullptr, w}}, lerp_dtype(s, e), kLerp, s, true);
}
at::Tensor& lerp_tensor_(at::Tensor& s, const at::Tensor& e, const at::Tensor& w) {
  return into("aten::lerp", {{&s}, {&e}, {&w}}, lerp_dtype(s, e, &w), kLerp, s, true);
}
at::Tensor& lerp_scalar_out(const at::Tensor& s, const at::Tensor& e, const c10::Scalar& w, at::Tensor& out) {
  return into("aten::lerp", {{&s}, {&e}, {nullptr, w}}, lerp_dtype(s, e), kLerp, out, false);
}
at::Tensor& lerp_tensor_out(const at::Tensor& s, const at::Tensor& e, const at::Tensor& w, at::Tensor& out) {
  return into("aten::lerp", {{&s}, {&e}, {&w}}, lerp_dtype(s, e, &w), kLerp, out, false);
}

// ---- addcmul / addcdiv ----
const Lower kAddcmul = [](hlo::Builder& b, const std::vector<hlo::Value>& v, ElementType out) {
  return ops::lower_addcmul(b, v[0], v[1], v[2], v[3], out);
};
const Lower kAddcdiv = [](hlo::Builder& b, const std::vector<hlo::Value>& v, ElementType out) {
  return ops::lower_addcdiv(b, v[0], v[1], v[2], v[3], out);
};
c10::ScalarType addc_dtype(const char* name, const at::Tensor& s, const at::Tensor& a, const at::Tensor& b) {
  c10::ScalarType t = promote({&s, &a, &b});
  if (std::string(name) == "aten::addcdiv") {
    TORCH_CHECK(!(c10::isIntegralType(a.scalar_type(), true) && c10::isIntegralType(b.scalar_type(), true)),
                "Integer division with addcdiv is no longer supported, and in a future release addcdiv will "
                "perform a true division of tensor1 and tensor2. The historic addcdiv behavior can be "
                "implemented as (input + value * torch.trunc(tensor1 / tensor2)).to(input.dtype) for integer "
                "inputs and as (input + value * tensor1 / tensor2) for float inputs. The future addcdiv "
                "behavior is just the latter implementation: (input + value * tensor1 / tensor2), for all "
                "dtypes.");
  }
  // CPU's and CUDA's kernels dispatch over numbers only.
  if (t == c10::ScalarType::Bool) not_implemented_for(name, t);
  return t;
}
#define TORCH_TPU_ADDC(fn, NAME, LOWER)                                                                 \
  at::Tensor fn(const at::Tensor& s, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& v) {  \
    return functional(NAME, {{&s}, {&a}, {&b}, {nullptr, v}}, addc_dtype(NAME, s, a, b), LOWER);        \
  }                                                                                                     \
  at::Tensor& fn##_(at::Tensor& s, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& v) {    \
    return into(NAME, {{&s}, {&a}, {&b}, {nullptr, v}}, addc_dtype(NAME, s, a, b), LOWER, s, true);    \
  }                                                                                                     \
  at::Tensor& fn##_out(const at::Tensor& s, const at::Tensor& a, const at::Tensor& b, const c10::Scalar& v, \
                       at::Tensor& out) {                                                               \
    return into(NAME, {{&s}, {&a}, {&b}, {nullptr, v}}, addc_dtype(NAME, s, a, b), LOWER, out, false); \
  }
TORCH_TPU_ADDC(addcmul, "aten::addcmul", kAddcmul)
TORCH_TPU_ADDC(addcdiv, "aten::addcdiv", kAddcdiv)
#undef TORCH_TPU_ADDC

// ---- maximum / minimum ----
const Lower kMaximum = [](hlo::Builder& b, const std::vector<hlo::Value>& v, ElementType out) {
  return ops::lower_maximum(b, v[0], v[1], out);
};
const Lower kMinimum = [](hlo::Builder& b, const std::vector<hlo::Value>& v, ElementType out) {
  return ops::lower_minimum(b, v[0], v[1], out);
};
c10::ScalarType minmax_dtype(const char* name, const at::Tensor& s, const at::Tensor& o) {
  TORCH_CHECK(!s.is_complex() && !o.is_complex(), name, " not implemented for complex tensors.");
  return at::result_type(s, o);
}
at::Tensor maximum(const at::Tensor& s, const at::Tensor& o) {
  return functional("aten::maximum", {{&s}, {&o}}, minmax_dtype("maximum", s, o), kMaximum);
}
at::Tensor& maximum_out(const at::Tensor& s, const at::Tensor& o, at::Tensor& out) {
  return into("aten::maximum", {{&s}, {&o}}, minmax_dtype("maximum", s, o), kMaximum, out, false);
}
at::Tensor minimum(const at::Tensor& s, const at::Tensor& o) {
  return functional("aten::minimum", {{&s}, {&o}}, minmax_dtype("minimum", s, o), kMinimum);
}
at::Tensor& minimum_out(const at::Tensor& s, const at::Tensor& o, at::Tensor& out) {
  return into("aten::minimum", {{&s}, {&o}}, minmax_dtype("minimum", s, o), kMinimum, out, false);
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("lerp.Scalar", lerp_scalar);
  m.impl("lerp.Tensor", lerp_tensor);
  m.impl("lerp_.Scalar", lerp_scalar_);
  m.impl("lerp_.Tensor", lerp_tensor_);
  m.impl("lerp.Scalar_out", lerp_scalar_out);
  m.impl("lerp.Tensor_out", lerp_tensor_out);
  m.impl("addcmul", addcmul);
  m.impl("addcmul_", addcmul_);
  m.impl("addcmul.out", addcmul_out);
  m.impl("addcdiv", addcdiv);
  m.impl("addcdiv_", addcdiv_);
  m.impl("addcdiv.out", addcdiv_out);
  m.impl("maximum", maximum);
  m.impl("maximum.out", maximum_out);
  m.impl("minimum", minimum);
  m.impl("minimum.out", minimum_out);
}

}  // namespace torch_tpu::aten
