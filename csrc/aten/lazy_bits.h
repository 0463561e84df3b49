// PyTorch's lazy conjugate and negative bits (x.conj(), x.conj().imag): a
// view that reads its storage conjugated or negated. Programs read a tensor
// through its view geometry only, so the bits must be applied before a
// tensor becomes a program input. PyTorch's Conjugate / Negative fallbacks
// do that for most ops; the ops it lets through with the bits set (copy_,
// the matrix products, triangular solves) resolve their operands here.
#pragma once

#include <ATen/core/Tensor.h>

#include "aten/op_runner.h"

namespace torch_tpu::aten {

// A new tpu tensor: `t` with its bits applied by a program.
at::Tensor resolve_lazy_bits(const at::Tensor& t);

// `t` itself when it carries neither bit, else resolve_lazy_bits(t).
at::Tensor without_lazy_bits(const at::Tensor& t);

// A program operand for `t`: borrowed (it must outlive the call, as kernel
// arguments do) unless a bit had to be resolved into a new tensor.
TensorArg operand_without_lazy_bits(const at::Tensor& t);

}  // namespace torch_tpu::aten
