// Checks that depend on device values (an index within bounds, a target
// class in range) without a host sync per op.
//
// The op computes a boolean "violated" flag in the same program as its
// result and hands it here. Flags are read at the next sync point (a copy
// to the host, item(), torch.tpu.synchronize()), and the first violated one
// raises its error there, the way CUDA reports device-side asserts at the
// next synchronization. Until then the op's result is whatever XLA computes
// for the bad input (indices clamped), but no value can reach the host or
// Python control flow without the error being raised first.
#pragma once

#include <ATen/core/Tensor.h>

#include <string>

namespace torch_tpu::aten {

enum class CheckError { kIndex, kValue, kRuntime };

// Registers `violated` (a 0-dim bool tpu tensor) with the error to raise
// when it reads true. `message` should name the op and the problem.
void defer_check(const at::Tensor& violated, CheckError error, std::string message);

// Reads the pending flags in order and raises the first violated check;
// the others are dropped. Called at sync points; cheap when nothing is
// pending.
void raise_failed_checks();

}  // namespace torch_tpu::aten
