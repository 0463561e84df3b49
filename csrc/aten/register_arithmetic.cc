// ATen glue for add, sub, mul, div and fill_: type promotion, broadcasting
// checks and the functional / in-place / out= forms, all calling the one
// lowering of each op in csrc/ops/elementwise/arithmetic.cc.
#include <ATen/ExpandUtils.h>
#include <ATen/MemoryOverlap.h>
#include <ATen/core/Tensor.h>
#include <ATen/ops/result_type.h>
#include <c10/core/ScalarType.h>
#include <torch/library.h>

#include <optional>
#include <string>

#include "aten/allocator.h"
#include "aten/deferred_checks.h"
#include "aten/dtypes.h"
#include "aten/eager_mode.h"
#include "aten/elementwise_args.h"
#include "aten/op_runner.h"
#include "aten/result_layout.h"
#include "aten/scalar_cache.h"
#include "ops/broadcast.h"
#include "ops/elementwise/arithmetic.h"
#include "ops/elementwise/binary_math.h"

namespace torch_tpu::aten {

namespace {

enum class Binary { kAdd, kSub, kMul, kDiv };

const char* op_name(Binary op) {
  switch (op) {
    case Binary::kAdd: return "aten::add";
    case Binary::kSub: return "aten::sub";
    case Binary::kMul: return "aten::mul";
    case Binary::kDiv: return "aten::div";
  }
  return "?";
}

ops::RoundingMode rounding(std::optional<c10::string_view> mode) {
  if (!mode) return ops::RoundingMode::kTrue;
  if (*mode == "trunc") return ops::RoundingMode::kTrunc;
  TORCH_CHECK(*mode == "floor", "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found '",
              *mode, "'");
  return ops::RoundingMode::kFloor;
}

c10::ScalarType result_dtype(Binary op, const at::Tensor& self, const at::Tensor& other,
                             ops::RoundingMode mode) {
  c10::ScalarType t = at::result_type(self, other);
  if (op == Binary::kDiv && mode == ops::RoundingMode::kTrue && c10::isIntegralType(t, true)) {
    t = c10::typeMetaToScalarType(c10::get_default_dtype());
  }
  if (op == Binary::kSub) {
    const bool self_bool = self.scalar_type() == c10::ScalarType::Bool;
    const bool other_bool = other.scalar_type() == c10::ScalarType::Bool;
    TORCH_CHECK(!(self_bool && other_bool),
                "Subtraction, the `-` operator, with two bool tensors is not supported. "
                "Use the `^` or `logical_xor()` operator instead.");
    TORCH_CHECK(!(self_bool || other_bool),
                "Subtraction, the `-` operator, with a bool tensor is not supported. "
                "If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.");
  }
  return t;
}

struct Prepared {
  OpCall call;
  ArgSlot self, other;
  bool has_alpha = false;
  ElementType out;
  ElementType compute;  // out, or f32 where a reduced float meets a CPU scalar or alpha
  ops::RoundingMode mode;
  bool zero_flag = false;  // a second output: some integer divisor is zero
};

Prepared prepare(Binary op, const at::Tensor& self, const at::Tensor& other,
                 const c10::Scalar& alpha, ops::RoundingMode mode, c10::ScalarType dtype) {
  const ElementType out = to_element_type(dtype, op_name(op));
  Prepared p{OpCall{op_name(op), "", {}, {}}, {}, {}, false, out, out, mode};
  // A Python number meets the tensor's dtype as CPU's kernels cast it: an
  // integer out of range wraps (uint8 + 300 adds 44), a float overflows to
  // inf. Reduced floats (f16, bf16) multiply and divide by it in f32 and
  // round only the result, as CPU's and CUDA's kernels do (their opmath
  // type): f16 x / 65536 is not 0. add and sub round it to the tensor's
  // dtype, as CPU's do, and compute x + alpha * y in f32 (CPU's fused
  // multiply-add).
  const bool reduced = opmath(dtype) != dtype;
  const bool wide_scalars = reduced && (op == Binary::kMul || op == Binary::kDiv);
  const c10::ScalarType scalar_dtype = wide_scalars ? opmath(dtype) : dtype;
  // Only a scalar second operand: a first one is cast to the dtype by CPU's
  // TensorIterator (Python's 1.7 * x arrives as mul(x, 1.7)).
  p.self = add_operand(p.call, self, dtype);
  p.other = add_operand(p.call, other, scalar_dtype);
  TORCH_CHECK(!alpha.isBoolean() || dtype == c10::ScalarType::Bool,
              "Boolean alpha only supported for Boolean results.");
  if ((op == Binary::kAdd || op == Binary::kSub) && !(alpha.isIntegral(true) && alpha.toLong() == 1)) {
    TORCH_CHECK(!c10::isIntegralType(dtype, true) || alpha.isIntegral(true),
                "For integral input tensors, argument alpha must not be a floating point number.");
    TORCH_CHECK(c10::isComplexType(dtype) || !alpha.isComplex(),
                "For non-complex input tensors, argument alpha must not be a complex number.");
    p.call.scalars.push_back({out, alpha});
    p.has_alpha = true;
  }
  if ((wide_scalars && p.other.scalar) || (reduced && p.has_alpha)) p.compute = ElementType::kF32;
  if (op == Binary::kDiv && mode != ops::RoundingMode::kTrue &&
      (dtype == c10::ScalarType::Bool || c10::isComplexType(dtype))) {
    not_implemented_for(mode == ops::RoundingMode::kFloor ? "div_floor_cpu" : "div_trunc_cpu", dtype);
  }
  // Integer division by zero (trunc / floor) raises as on CPU: at once for a
  // scalar divisor, at the next sync for a tensor element (a deferred check).
  if (op == Binary::kDiv && mode != ops::RoundingMode::kTrue && c10::isIntegralType(dtype, true)) {
    if (p.other.scalar) {
      // (toDouble: a uint64 divisor from 2^63 up is no int64)
      TORCH_CHECK(p.call.scalars[p.other.index].value.toDouble() != 0, "ZeroDivisionError");
    } else {
      p.zero_flag = true;
    }
  }
  p.call.attributes.push_back(static_cast<char>(p.out));
  p.call.attributes.push_back(static_cast<char>(p.compute));
  p.call.attributes.push_back(static_cast<char>(mode));
  p.call.attributes.push_back(p.zero_flag ? 'z' : '-');
  append_slot(p.call.attributes, p.self);
  append_slot(p.call.attributes, p.other);
  return p;
}

LoweringBody body(Binary op, const Prepared& p) {
  return [op, self = p.self, other = p.other, has_alpha = p.has_alpha, out = p.out, wide = p.compute,
          mode = p.mode, flag = p.zero_flag](hlo::Builder& b, const std::vector<hlo::Value>& tensors,
                              const std::vector<hlo::Value>& scalars) {
    const hlo::Value x = self.in_result_type(b, tensors, scalars, out);
    const hlo::Value y = other.in_result_type(b, tensors, scalars, out);
    std::optional<hlo::Value> alpha;
    if (has_alpha) alpha = scalars.back();
    // 8-bit floats compute in f32 and round once, saturating as CPU's
    // e4m3fn multiply does (XLA's own narrowing would make NaN of overflow).
    const ElementType compute = is_float8(out) ? ElementType::kF32 : wide;
    auto narrowed = [&](const hlo::Value& r) { return std::vector<hlo::Value>{ops::convert_to(b, r, out)}; };
    switch (op) {
      case Binary::kAdd: return narrowed(ops::lower_add(b, x, y, alpha, compute));
      case Binary::kSub: return narrowed(ops::lower_sub(b, x, y, alpha, compute));
      case Binary::kMul: return narrowed(ops::lower_mul(b, x, y, compute));
      case Binary::kDiv: {
        std::vector<hlo::Value> results = narrowed(ops::lower_div(b, x, y, compute, mode));
        if (flag) {
          // only divisors that meet a dividend count (an empty result divides nothing)
          hlo::Value divisor = ops::broadcast_to(b, ops::convert_to(b, y, out), results[0].dims());
          results.push_back(ops::any_zero(b, divisor));
        }
        return results;
      }
    }
    return std::vector<hlo::Value>{};
  };
}

at::Tensor binary(Binary op, const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha,
                  ops::RoundingMode mode = ops::RoundingMode::kTrue) {
  Prepared p = prepare(op, self, other, alpha, mode, result_dtype(op, self, other, mode));
  std::vector<at::Tensor> outs = run_op(p.call, body(op, p));
  if (p.zero_flag) defer_check(outs.at(1), CheckError::kRuntime, "ZeroDivisionError");
  return in_iterator_layout(outs.at(0), p.call.tensors);
}

at::Tensor& binary_into(Binary op, const at::Tensor& self, const at::Tensor& other, const c10::Scalar& alpha,
                        at::Tensor& out, bool inplace, ops::RoundingMode mode = ops::RoundingMode::kTrue) {
  const c10::ScalarType dtype = result_dtype(op, self, other, mode);
  TORCH_CHECK(c10::canCast(dtype, out.scalar_type()), "result type ", dtype,
              " can't be cast to the desired output type ", out.scalar_type());
  const auto shape = at::infer_size(self.sizes(), other.sizes());
  prepare_out(out, shape, inplace, {self, other});
  Prepared p = prepare(op, self, other, alpha, mode, dtype);
  if (!p.zero_flag) {
    run_op_into(p.call, body(op, p), out);
    return out;
  }
  // The flag is a second output, which run_op_into cannot return.
  std::vector<at::Tensor> outs = run_op(p.call, body(op, p));
  defer_check(outs.at(1), CheckError::kRuntime, "ZeroDivisionError");
  out.copy_(outs.at(0));
  return out;
}

at::Tensor add(const at::Tensor& s, const at::Tensor& o, const c10::Scalar& a) { return binary(Binary::kAdd, s, o, a); }
at::Tensor& add_(at::Tensor& s, const at::Tensor& o, const c10::Scalar& a) { return binary_into(Binary::kAdd, s, o, a, s, true); }
at::Tensor& add_out(const at::Tensor& s, const at::Tensor& o, const c10::Scalar& a, at::Tensor& out) { return binary_into(Binary::kAdd, s, o, a, out, false); }
at::Tensor sub(const at::Tensor& s, const at::Tensor& o, const c10::Scalar& a) { return binary(Binary::kSub, s, o, a); }
at::Tensor& sub_(at::Tensor& s, const at::Tensor& o, const c10::Scalar& a) { return binary_into(Binary::kSub, s, o, a, s, true); }
at::Tensor& sub_out(const at::Tensor& s, const at::Tensor& o, const c10::Scalar& a, at::Tensor& out) { return binary_into(Binary::kSub, s, o, a, out, false); }
at::Tensor mul(const at::Tensor& s, const at::Tensor& o) { return binary(Binary::kMul, s, o, 1); }
at::Tensor& mul_(at::Tensor& s, const at::Tensor& o) { return binary_into(Binary::kMul, s, o, 1, s, true); }
at::Tensor& mul_out(const at::Tensor& s, const at::Tensor& o, at::Tensor& out) { return binary_into(Binary::kMul, s, o, 1, out, false); }
at::Tensor div(const at::Tensor& s, const at::Tensor& o) { return binary(Binary::kDiv, s, o, 1); }
at::Tensor& div_(at::Tensor& s, const at::Tensor& o) { return binary_into(Binary::kDiv, s, o, 1, s, true); }
at::Tensor& div_out(const at::Tensor& s, const at::Tensor& o, at::Tensor& out) { return binary_into(Binary::kDiv, s, o, 1, out, false); }
at::Tensor div_mode(const at::Tensor& s, const at::Tensor& o, std::optional<c10::string_view> m) {
  return binary(Binary::kDiv, s, o, 1, rounding(m));
}
at::Tensor& div_mode_(at::Tensor& s, const at::Tensor& o, std::optional<c10::string_view> m) {
  return binary_into(Binary::kDiv, s, o, 1, s, true, rounding(m));
}
at::Tensor& div_mode_out(const at::Tensor& s, const at::Tensor& o, std::optional<c10::string_view> m, at::Tensor& out) {
  return binary_into(Binary::kDiv, s, o, 1, out, false, rounding(m));
}

// A scalar fill writes one value everywhere, so CPU allows it on an
// expanded tensor (x.expand(2, 4).zero_()). Filling the view without its broadcast
// (stride 0) dimensions writes the same memory once per element.
at::Tensor distinct_elements(const at::Tensor& self) {
  if (at::has_internal_overlap(self) != at::MemOverlap::Yes) return self;
  std::vector<int64_t> sizes = self.sizes().vec();
  for (int64_t d = 0; d < self.dim(); ++d) {
    if (self.stride(d) == 0 && sizes[d] > 0) sizes[d] = 1;
  }
  return self.as_strided(sizes, self.strides(), self.storage_offset());
}

// A 0-dim tensor that owns its whole storage (a loss's seed gradient, an
// optimizer's step count) filled in strict eager takes the value's cached
// device copy (scalar_cache.h) as its storage's value: no program to launch
// for what every backward() and many optimizer steps do. Device values are
// never written in place, so sharing the cached one is safe; the cache's
// reference keeps an in-place update from donating it. Fused eager records
// the fill instead, where it costs nothing and stays a constant of the graph.
bool fill_from_scalar_cache(const at::Tensor& self, ElementType type, const c10::Scalar& value) {
  if (self.dim() != 0 || self.storage_offset() != 0 || eager_mode() != EagerMode::kStrict) return false;
  const c10::Storage& storage = self.storage();
  if (storage.nbytes() != self.itemsize()) return false;
  storage_value(storage).set_value(cached_scalar_buffer(self.device().index(), {type, value}));
  return true;
}

at::Tensor& fill_scalar(at::Tensor& self, const c10::Scalar& value) {
  const ElementType out = to_element_type(self.scalar_type(), "aten::fill_");
  if (fill_from_scalar_cache(self, out, value)) return self;
  OpCall call{"aten::fill_", std::string(1, static_cast<char>(out)), {}, {{out, value}}};
  const at::Tensor target = distinct_elements(self);
  auto dims = target.sizes().vec();
  run_op_into(call, [dims, out](hlo::Builder& b, const std::vector<hlo::Value>&, const std::vector<hlo::Value>& s) {
    return std::vector<hlo::Value>{ops::lower_fill(b, s[0], dims, out)};
  }, target);
  return self;
}

at::Tensor& fill_tensor(at::Tensor& self, const at::Tensor& value) {
  TORCH_CHECK(value.dim() == 0, "fill_ only supports 0-dimension value tensor but got tensor with ",
              value.dim(), " dimensions.");
  // Cast on the host as CPU's fill_ casts a tensor value: wrapped or
  // saturated, never the overflow error a Python number gets. ATen fills
  // with a value from another device as with a scalar (overlap allowed).
  if (value.device().is_cpu()) return fill_scalar(self, value.to(self.scalar_type()).item());
  // A same-device value is a copy_ in ATen, which refuses overlapping
  // destinations.
  at::assert_no_internal_overlap(self);
  const ElementType out = to_element_type(self.scalar_type(), "aten::fill_");
  OpCall call{"aten::fill_", std::string(1, static_cast<char>(out)), {value}, {}};
  auto dims = self.sizes().vec();
  run_op_into(call, [dims, out](hlo::Builder& b, const std::vector<hlo::Value>& t, const std::vector<hlo::Value>&) {
    return std::vector<hlo::Value>{ops::lower_fill(b, t[0], dims, out)};
  }, self);
  return self;
}

at::Tensor& zero_(at::Tensor& self) { return fill_scalar(self, 0); }

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("zero_", zero_);
  m.impl("add.Tensor", add);
  m.impl("add_.Tensor", add_);
  m.impl("add.out", add_out);
  m.impl("sub.Tensor", sub);
  m.impl("sub_.Tensor", sub_);
  m.impl("sub.out", sub_out);
  m.impl("mul.Tensor", mul);
  m.impl("mul_.Tensor", mul_);
  m.impl("mul.out", mul_out);
  m.impl("div.Tensor", div);
  m.impl("div_.Tensor", div_);
  m.impl("div.out", div_out);
  m.impl("div.Tensor_mode", div_mode);
  m.impl("div_.Tensor_mode", div_mode_);
  m.impl("div.out_mode", div_mode_out);
  m.impl("fill_.Scalar", fill_scalar);
  m.impl("fill_.Tensor", fill_tensor);
}

}  // namespace torch_tpu::aten
