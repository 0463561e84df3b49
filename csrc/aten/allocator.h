// The tpu allocator: storages get a pseudo-address and a StorageValue
// (csrc/runtime/storage_value.h) as their DataPtr context; no device memory
// is reserved until something writes the storage.
#pragma once

#include <c10/core/Allocator.h>
#include <c10/core/Storage.h>

#include "runtime/storage_value.h"

namespace torch_tpu::aten {

c10::Allocator* tpu_allocator();

// The StorageValue of a tpu storage; throws when `storage` is not one.
runtime::StorageValue& storage_value(const c10::Storage& storage);
runtime::StorageValue& storage_value(const c10::StorageImpl& storage);

}  // namespace torch_tpu::aten
