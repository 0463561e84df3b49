// torch.set_float32_matmul_precision on the device. PyTorch's three levels
// map onto XLA's precision config of float32 products: "highest" (the
// default: full f32, as CPU computes) HIGHEST, "high" (TF32 or three bf16
// passes) HIGH, "medium" (one bf16 pass) DEFAULT. On a TPU the lower levels
// run the matrix unit several times faster and XLA's GPU compiler may take
// TF32 (neither measured here); XLA's CPU compiler computes f32 whatever
// the level.
//
// The level is read when an op is called, not when its program is built
// (fused eager builds later), and becomes part of the op's key, so a program
// built under one level is never launched under another.
#pragma once

#include <c10/core/ScalarType.h>

#include <string>

#include "hlo/op_options.h"

namespace torch_tpu::aten {

// The level in force for a product (or convolution) of `dtype` operands,
// as XLA's precision: where it applies (float32, complex64), else HIGHEST,
// which the lowerings of other dtypes ignore.
hlo::Precision float32_precision_for(c10::ScalarType dtype);

// Appends `precision` (from float32_precision_for) to an op key's
// attributes; nothing for HIGHEST, so keys (and disk cache entries) made
// before the level existed still match.
void put_float32_precision(std::string& attributes, hlo::Precision precision);

// Both: the level for `dtype`, put into `attributes`.
hlo::Precision keyed_float32_precision(std::string& attributes, c10::ScalarType dtype);

}  // namespace torch_tpu::aten
