// Growing or shrinking a tpu storage (Tensor.resize_, storage resize_):
// the storage gets a new pseudo-address and a new value that keeps the
// old contents (up to the smaller size) and reads as zeros beyond them.
#pragma once

#include <c10/core/Storage.h>

#include <cstddef>

namespace torch_tpu::aten {

void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes);

}  // namespace torch_tpu::aten
