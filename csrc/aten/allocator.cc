#include "aten/allocator.h"

#include <c10/util/Exception.h>

#include "runtime/current_device.h"

namespace torch_tpu::aten {

namespace {

void delete_storage_value(void* context) {
  delete static_cast<runtime::StorageValue*>(context);
}

class TpuAllocator final : public c10::Allocator {
 public:
  c10::DataPtr allocate(size_t nbytes) override {
    auto device = static_cast<c10::DeviceIndex>(runtime::current_device());
    uintptr_t address = runtime::reserve_address(nbytes);
    auto* value = new runtime::StorageValue(device, nbytes, address);
    return c10::DataPtr(reinterpret_cast<void*>(address), value, &delete_storage_value,
                        c10::Device(c10::DeviceType::PrivateUse1, device));
  }

  c10::DeleterFnPtr raw_deleter() const override { return nullptr; }

  // Device memory is never host-addressable: a copy between two tpu
  // storages is a device operation (csrc/aten/copy.cc), never a memcpy.
  void copy_data(void* dest, const void* src, std::size_t count) const override {
    TORCH_CHECK(false, "tpu storages cannot be copied as host memory");
  }
};

TpuAllocator g_allocator;

}  // namespace

c10::Allocator* tpu_allocator() { return &g_allocator; }

runtime::StorageValue& storage_value(const c10::StorageImpl& storage) {
  TORCH_CHECK(storage.device_type() == c10::DeviceType::PrivateUse1,
              "expected a tpu storage, got one on ", storage.device());
  auto* value = static_cast<runtime::StorageValue*>(storage.data_ptr().get_context());
  TORCH_CHECK(value != nullptr, "tpu storage without a device value (not made by the tpu allocator)");
  return *value;
}

runtime::StorageValue& storage_value(const c10::Storage& storage) {
  return storage_value(*storage.unsafeGetStorageImpl());
}

REGISTER_ALLOCATOR(c10::DeviceType::PrivateUse1, &g_allocator)

}  // namespace torch_tpu::aten
