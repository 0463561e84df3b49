// View ops that PyTorch implements per backend. They only change metadata
// (sizes, strides, offset) over the same storage; reading a view lowers the
// geometry inside the reading op's program (csrc/aten/operand.cc).
#include <ATen/EmptyTensor.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/Resize.h>
#include <ATen/ops/_reshape_alias_native.h>
#include <ATen/ops/as_strided_native.h>
#include <ATen/ops/is_set_to_native.h>
#include <ATen/ops/set_native.h>
#include <ATen/ops/unfold_native.h>
#include <ATen/ops/view_native.h>
#include <torch/library.h>

#include "aten/allocator.h"
#include "aten/device_scope.h"
#include "aten/storage_resize.h"

namespace torch_tpu::aten {

namespace {

// CPU's set_ with geometry, except that a storage too small for it grows as
// a tpu storage grows (CPU's variant grew it with a host memcpy from the
// device address, which crashed).
at::Tensor& set_storage(at::Tensor& self, at::Storage source, int64_t storage_offset,
                        c10::IntArrayRef size, c10::IntArrayRef stride) {
  at::native::checkSetStorage(self, std::move(source), storage_offset, size, stride);
  auto* impl = self.unsafeGetTensorImpl();
  impl->set_storage_offset(storage_offset);
  const at::OptionalIntArrayRef strides = stride.data() != nullptr ? at::OptionalIntArrayRef(stride) : std::nullopt;
  at::native::resize_impl_cpu_(impl, size, strides, /*resize_storage=*/false);
  const size_t itemsize = self.dtype().itemsize();
  const size_t needed = strides ? at::detail::computeStorageNbytes(size, *strides, itemsize, storage_offset)
                                : at::detail::computeStorageNbytesContiguous(size, itemsize, storage_offset);
  if (self.numel() > 0 && needed > self.storage().nbytes()) {
    // The storage's value keeps its own element type (a float64 view over
    // float32 storage): grow by whole elements of it.
    const runtime::DeviceBufferPtr value = storage_value(self.storage()).value();
    const size_t stored = value ? element_size(value->type().dtype) : 1;
    resize_storage_bytes(self.storage(), (needed + stored - 1) / stored * stored);
  }
  return self;
}

// t.set_(): t becomes an empty tensor over a new, empty storage.
at::Tensor& set_empty(at::Tensor& self) {
  CurrentDeviceScope scope(self.device().index());  // the allocator allocates on the current device
  c10::Storage storage(c10::Storage::use_byte_size_t(), 0, tpu_allocator(), /*resizable=*/true);
  return set_storage(self, std::move(storage), 0, {0}, {});
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("set_", set_empty);
  m.impl("view", at::native::view);
  m.impl("as_strided", at::native::as_strided_tensorimpl);
  m.impl("_reshape_alias", at::native::_reshape_alias);
  m.impl("unfold", at::native::unfold);
  m.impl("set_.source_Storage_storage_offset", set_storage);
  m.impl("set_.source_Storage", at::native::set_);
  m.impl("set_.source_Tensor", at::native::set_tensor_);
  m.impl("is_set_to", at::native::is_set_to);  // compares metadata only
}

}  // namespace torch_tpu::aten
