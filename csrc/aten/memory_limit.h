// torch.tpu.set_per_process_memory_fraction: a cap on the device memory this
// process's tensors and programs take, as CUDA's caps its caching allocator.
//
// The cap bounds what memory_allocated() counts, the live buffers, so that
// a cap above a step's max_memory_allocated() lets the step run. Those are
// made where values are made: a program's results, a copy from the host or
// from another device. Those places ask here first, so a step past the cap
// raises torch.OutOfMemoryError before anything is launched, naming what it
// was for; the tensors and pending work stay as they were. XLA's scratch
// buffers while a program runs are the plugin's, outside the count, as
// they are outside memory_allocated().
#pragma once

#include <c10/util/Exception.h>

#include <cstdint>

#include "pjrt/executable.h"

namespace torch_tpu::aten {

// torch.OutOfMemoryError from the cap: raised before anything launched or
// moved, so the work that asked can run later as it is (a fused graph
// stays pending).
class MemoryLimitError : public c10::OutOfMemoryError {
  using c10::OutOfMemoryError::OutOfMemoryError;
};

// `fraction` in [0, 1] of the device's total memory (device_capacity);
// refused on a platform that does not report its size.
void set_memory_fraction(int device, double fraction);
// 1.0 until set, as CUDA's.
double memory_fraction(int device);

// Before launching `program` on `device`: its results, less the donated
// arguments they reuse (when `donates`), must fit beside the bytes already
// allocated.
void check_launch_within_limit(int device, const pjrt::LoadedExecutable& program, bool donates, const char* op);
// Before a transfer that makes a buffer of `bytes` on `device`.
void check_transfer_within_limit(int device, int64_t bytes, const char* what);

}  // namespace torch_tpu::aten
