// Tensor creation and resizing on tpu. No device memory is touched: a new
// storage has no value until an op writes it (reads see zeros). Under
// torch.use_deterministic_algorithms, new memory is filled as CPU and CUDA
// fill it (NaN for floats, the largest value for integers), so a read of
// memory nobody wrote shows up.
#include <ATen/EmptyTensor.h>
#include <ATen/Context.h>
#include <ATen/core/Tensor.h>
#include <ATen/native/ResizeCommon.h>
#include <ATen/native/TensorFactories.h>
#include <torch/library.h>

#include "aten/allocator.h"
#include "aten/device_scope.h"
#include "aten/dtypes.h"
#include "aten/storage_resize.h"

namespace torch_tpu::aten {

namespace {

constexpr c10::DispatchKeySet kTpuKeys{c10::DispatchKey::PrivateUse1};

bool fill_uninitialized() {
  const auto& context = at::globalContext();
  return context.deterministicAlgorithms() && context.deterministicFillUninitializedMemory();
}

at::Tensor filled_if_deterministic(at::Tensor t) {
  if (fill_uninitialized()) at::native::fill_empty_deterministic_(t);
  return t;
}

at::Tensor empty_memory_format(c10::IntArrayRef size, std::optional<at::ScalarType> dtype,
                               std::optional<at::Layout> layout, std::optional<at::Device> device,
                               std::optional<bool> pin_memory,
                               std::optional<at::MemoryFormat> memory_format) {
  auto scalar_type = c10::dtype_or_default(dtype);
  (void)to_element_type(scalar_type, "aten::empty");
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");  // as CUDA says
  CurrentDeviceScope scope(checked_device_index(device));
  return filled_if_deterministic(
      at::detail::empty_generic(size, tpu_allocator(), kTpuKeys, scalar_type, memory_format));
}

at::Tensor empty_strided(c10::IntArrayRef size, c10::IntArrayRef stride,
                         std::optional<at::ScalarType> dtype, std::optional<at::Layout> layout,
                         std::optional<at::Device> device, std::optional<bool> pin_memory) {
  auto scalar_type = c10::dtype_or_default(dtype);
  (void)to_element_type(scalar_type, "aten::empty_strided");
  TORCH_CHECK(!pin_memory.value_or(false), "Only dense CPU tensors can be pinned");  // as CUDA says
  CurrentDeviceScope scope(checked_device_index(device));
  return filled_if_deterministic(
      at::detail::empty_strided_generic(size, stride, tpu_allocator(), kTpuKeys, scalar_type));
}

const at::Tensor& resize_(const at::Tensor& self, c10::IntArrayRef size,
                          std::optional<at::MemoryFormat> memory_format) {
  auto* impl = self.unsafeGetTensorImpl();
  for (int64_t s : size) TORCH_CHECK(s >= 0, "aten::resize_: negative size ", s);
  // Same sizes: the layout stays as it is (a transposed or expanded out=
  // tensor keeps its strides), as on CPU.
  if (self.sizes() == size) {
    TORCH_CHECK(memory_format != at::MemoryFormat::Preserve, "aten::resize_: unsupported memory format ", *memory_format);
    if (memory_format) impl->empty_tensor_restride(*memory_format);
    return self;
  }
  impl->set_sizes_contiguous(size);
  const size_t needed = at::detail::computeStorageNbytesContiguous(
      size, self.dtype().itemsize(), self.storage_offset());
  const auto old_nbytes = static_cast<int64_t>(self.storage().nbytes());
  if (needed > self.storage().nbytes()) resize_storage_bytes(self.storage(), needed);
  if (memory_format) impl->empty_tensor_restride(*memory_format);
  if (fill_uninitialized()) at::native::fill_resize_deterministic_(self, old_nbytes);
  return self;
}

}  // namespace

TORCH_LIBRARY_IMPL(aten, PrivateUse1, m) {
  m.impl("empty.memory_format", empty_memory_format);
  m.impl("empty_strided", empty_strided);
  m.impl("resize_", resize_);
}

}  // namespace torch_tpu::aten
