// Device copies of runtime scalar inputs. Scalars repeat (alpha = 1, a
// learning rate for many steps, a view's offset in a loop), so their device
// buffers are kept per device and value: a repeated value costs no transfer.
#pragma once

#include <cstddef>

#include "aten/scalar_input.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

// The device buffer holding `scalar` converted to its element type on
// `device`, uploaded on first use. The cache keeps the most recently used
// values and evicts the least recently used one beyond its capacity.
runtime::DeviceBufferPtr cached_scalar_buffer(int device, const ScalarInput& scalar);

// How many values the cache holds now (for tests and statistics).
size_t cached_scalar_count();

}  // namespace torch_tpu::aten
