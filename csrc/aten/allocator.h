// The tpu allocator: storages get a pseudo-address and a StorageValue
// (csrc/runtime/storage_value.h) as their DataPtr context; no device memory
// is reserved until something writes the storage.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>

#include <string>

#include "runtime/storage_value.h"

namespace torch_tpu::aten {

c10::Allocator* tpu_allocator();

// A device's total memory in bytes (0 when the platform does not say),
// and the check that refuses a value larger than the whole device with
// torch.OutOfMemoryError naming `what` (a storage being made, an op's
// result before its program is compiled).
size_t device_capacity(c10::DeviceIndex device);
void check_fits_device(c10::DeviceIndex device, double nbytes, const std::string& what);

// Counts an out-of-memory error in the statistics and the memory history
// and returns its message, worded as CUDA's ("tpu out of memory. Tried to
// allocate 2.00 GiB for `what`. `why`").
std::string note_out_of_memory(c10::DeviceIndex device, double nbytes, const std::string& what,
                               const std::string& why);
// "512 bytes", "20.00 MiB", "1.50 GiB", as CUDA's messages write sizes.
std::string format_bytes(double bytes);

// Destroys the buffers dropped on every device and not yet handed back to
// the plugin (runtime/buffer_release.h), waiting for programs that still
// use them: torch.tpu.empty_cache(), and before refusing an allocation.
void release_dropped_buffers();

// Gives a tpu storage a new value; a device graph capture (device_graph.h)
// sees the write. Every op result and in-place write goes through here.
void set_storage_value(const c10::Storage& storage, runtime::DeviceBufferPtr value);

// The StorageValue of a tpu storage; throws when `storage` is not one.
runtime::StorageValue& storage_value(const c10::Storage& storage);
runtime::StorageValue& storage_value(const c10::StorageImpl& storage);

}  // namespace torch_tpu::aten
