// Arguments of elementwise ops: tpu tensors become program operands; CPU
// 0-dim tensors (Python numbers ATen wrapped, or scalars the user passed)
// become runtime scalar inputs, as CUDA accepts them too.
#pragma once

#include <ATen/core/Tensor.h>

#include <vector>

#include "aten/op_runner.h"

namespace torch_tpu::aten {

struct ArgSlot {
  bool scalar;
  size_t index;

  const hlo::Value& pick(const std::vector<hlo::Value>& tensors,
                         const std::vector<hlo::Value>& scalars) const {
    return scalar ? scalars[index] : tensors[index];
  }
};

// Adds `t` to `call`; a CPU scalar travels as `scalar_type`.
ArgSlot add_arg(OpCall& call, const at::Tensor& t, ElementType scalar_type);

// Appends `slot`'s shape to the call's key material (scalars are 0-dim and
// keyed by their type already).
void append_slot(std::string& attributes, const ArgSlot& slot);

}  // namespace torch_tpu::aten
