// Checks that depend on device values (an index within bounds, a target
// class in range) without a host sync per op.
//
// The op computes a boolean "violated" flag in the same program as its
// result and hands it here. Flags are read at the next sync point (a copy
// to the host, item(), torch.tpu.synchronize()), and the first violated one
// raises its error there, the way CUDA reports device-side asserts at the
// next synchronization. Until then the op's result is whatever XLA computes
// for the bad input (indices clamped), but no value can reach the host or
// Python control flow without the error being raised first (a read skips
// only flags its value cannot depend on: raise_failed_checks_for_read).
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

enum class CheckError { kIndex, kValue, kRuntime };

// Registers `violated` (a 0-dim bool tpu tensor) with the error to raise
// when it reads true. `message` should name the op and the problem.
void defer_check(const at::Tensor& violated, CheckError error, std::string message);

// Reads the pending flags in order and raises the first violated check;
// the others are dropped. Called at sync points; cheap when nothing is
// pending.
void raise_failed_checks();

// The same for a read of `value` from the device, skipping the flags that
// it cannot depend on, which stay pending for the next sync point: when
// fused eager computed the value, those of fused graphs that ran after its
// graph (or have not run). Reading a loss computed by a training step's
// forward graph then does not wait for the backward graph's checks (the
// indices of an index_put_ that accumulates a gradient).
void raise_failed_checks_for_read(const runtime::DeviceBuffer& value);

}  // namespace torch_tpu::aten
