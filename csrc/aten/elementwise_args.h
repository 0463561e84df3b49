// Arguments of elementwise ops: tpu tensors become program operands; CPU
// 0-dim tensors (Python numbers ATen wrapped, or scalars the user passed)
// become runtime scalar inputs, as CUDA accepts them too.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "aten/op_runner.h"
#include "ops/broadcast.h"

namespace torch_tpu::aten {

struct ArgSlot {
  bool scalar;
  size_t index;

  const hlo::Value& pick(const std::vector<hlo::Value>& tensors,
                         const std::vector<hlo::Value>& scalars) const {
    return scalar ? scalars[index] : tensors[index];
  }

  // The operand as an op's lowering takes it: a tensor cast to the result
  // type `result` first, as TensorIterator casts operands (int16 2049 meets
  // an f16 result as 2048), also where the op then computes in f32; a
  // scalar as it travels (already in the type CPU gives it).
  hlo::Value in_result_type(hlo::Builder& b, const std::vector<hlo::Value>& tensors,
                            const std::vector<hlo::Value>& scalars, ElementType result) const {
    return scalar ? scalars[index] : ops::convert_to(b, tensors[index], result);
  }
};

// Adds `t` to `call`; a CPU scalar travels as `scalar_type`. `t` is
// borrowed, not copied: it must outlive `call` (kernel arguments do).
ArgSlot add_arg(OpCall& call, const at::Tensor& t, ElementType scalar_type);
// A temporary (`t.reshape({})`) is kept by `call` instead.
ArgSlot add_arg(OpCall& call, at::Tensor&& t, ElementType scalar_type);

// `s` as a CPU kernel sees it after a C cast to `t`: integers wrap, floats
// round (out-of-range values become inf), so the runtime's conversion never
// raises where CPU does not.
c10::Scalar cast_scalar(const c10::Scalar& s, c10::ScalarType t);
// For fill values (masked_fill, index_fill, scatter's value, index_add's
// alpha): CPU converts those with an overflow check, so a value `t` cannot
// hold raises c10's "value cannot be converted ... without overflow".
c10::Scalar checked_cast_scalar(const c10::Scalar& s, c10::ScalarType t);

// Like add_arg (borrowing `t` too), with a CPU 0-dim tensor cast to `type`
// as CPU casts it.
ArgSlot add_operand(OpCall& call, const at::Tensor& t, c10::ScalarType type);

// ---- out= and dtype checks, worded as CPU words them ----

// Reduced floats take their float scalars in f32 (the CPU kernels' opmath
// type); every other dtype in itself.
c10::ScalarType opmath(c10::ScalarType t);
// `op` is implemented for floating dtypes only.
void check_float(const char* op, c10::ScalarType t);
// `t` is on tpu; CUDA's mixed-device message otherwise.
void check_tpu(const at::Tensor& t, const char* op);

[[noreturn]] void not_implemented_for(const char* op, c10::ScalarType t);
// `result` must cast to out's dtype (most out= ops).
void check_castable(c10::ScalarType result, const at::Tensor& out);
// out's dtype must be `result` exactly (ops whose CPU kernel demands it).
void check_exact(c10::ScalarType result, const at::Tensor& out);
// out= resizes `out`; an in-place op, or an out that is one of
// `layout_inputs`, must already have the result's shape.
// A resized out takes the layout TensorIterator gives the result over
// `layout_inputs` (as CPU's out= of an elementwise op: x.t() + 1 written
// into an empty out is transposed); row-major when that list is empty.
void prepare_out(at::Tensor& out, c10::IntArrayRef shape, bool inplace,
                 const std::vector<TensorArg>& layout_inputs = {});

// Appends `slot`'s shape to the call's key material (scalars are 0-dim and
// keyed by their type already).
void append_slot(std::string& attributes, const ArgSlot& slot);

}  // namespace torch_tpu::aten
