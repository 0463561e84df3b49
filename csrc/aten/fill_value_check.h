// The overflow check of a fill value that lives on the device.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

namespace torch_tpu::aten {

// masked_fill / index_fill with a 0-dim tpu tensor as the value: CPU and
// CUDA read it with item() and refuse one that the destination type `dst`
// cannot hold (c10::checked_convert's "value cannot be converted to type
// int8_t without overflow"). Reading it here would cost a sync per call,
// so the same test runs on the device and raises at the next sync
// (deferred_checks.h). Nothing is checked where no value can overflow.
void defer_fill_value_check(const at::Tensor& value, c10::ScalarType dst);

}  // namespace torch_tpu::aten
