// Lowerings of the multi-operand pointwise ops optimizers use
// (lerp, addcmul, addcdiv) and of maximum / minimum.
#pragma once

#include "hlo/builder.h"

namespace torch_tpu::ops {

// self + weight * (end - self)
hlo::Value lower_lerp(hlo::Builder& b, const hlo::Value& self, const hlo::Value& end,
                      const hlo::Value& weight, ElementType out);
// self + value * t1 * t2
hlo::Value lower_addcmul(hlo::Builder& b, const hlo::Value& self, const hlo::Value& t1,
                         const hlo::Value& t2, const hlo::Value& value, ElementType out);
// self + value * t1 / t2
hlo::Value lower_addcdiv(hlo::Builder& b, const hlo::Value& self, const hlo::Value& t1,
                         const hlo::Value& t2, const hlo::Value& value, ElementType out);
// Elementwise max / min, propagating NaN like PyTorch.
hlo::Value lower_maximum(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out);
hlo::Value lower_minimum(hlo::Builder& b, const hlo::Value& x, const hlo::Value& y, ElementType out);

}  // namespace torch_tpu::ops
