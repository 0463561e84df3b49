#include "aten/storage_resize.h"

#include <c10/util/Exception.h>

#include "aten/allocator.h"
#include "aten/device_scope.h"
#include "aten/op_runner.h"

namespace torch_tpu::aten {

void resize_storage_bytes(const c10::Storage& storage, size_t new_nbytes) {
  TORCH_CHECK(storage.resizable(), "Trying to resize storage that is not resizable");
  auto* impl = storage.unsafeGetStorageImpl();
  runtime::StorageValue& old_value = storage_value(*impl);
  runtime::DeviceBufferPtr old_buffer = old_value.value();
  const int device = old_value.device();

  check_fits_device(static_cast<c10::DeviceIndex>(device), static_cast<double>(new_nbytes), "a storage");
  runtime::DeviceBufferPtr new_buffer;
  if (old_buffer && new_nbytes > 0) {
    const hlo::TensorType& old_type = old_buffer->type();
    const size_t item = element_size(old_type.dtype);
    TORCH_CHECK_NOT_IMPLEMENTED(new_nbytes % item == 0, "tpu: resizing a storage of ",
                                short_name(old_type.dtype), " elements to ", new_nbytes,
                                " bytes (not a whole number of elements)");
    const int64_t old_n = old_type.num_elements();
    const int64_t new_n = static_cast<int64_t>(new_nbytes / item);
    std::string key = "storage_resize";
    key.push_back(static_cast<char>(old_type.dtype));
    key += hlo::dims_to_string(old_type.dims) + ">" + std::to_string(new_n);
    auto build = [&] {
      hlo::Builder b("storage_resize");
      hlo::Value flat = b.reshape(b.parameter(old_type), {old_n});
      hlo::Value zero = b.constant_splat_int(0, hlo::TensorType::scalar(old_type.dtype));
      // pad with a negative high edge truncates, a positive one appends zeros
      return b.build({b.pad(flat, zero, {0}, {new_n - old_n}, {0})});
    };
    new_buffer = run_program(key, "storage resize", build, {old_buffer->get()}, device).at(0);
  }

  c10::DataPtr data;
  {
    CurrentDeviceScope scope(device);
    data = tpu_allocator()->allocate(new_nbytes);
  }
  impl->set_data_ptr_noswap(std::move(data));
  impl->set_nbytes(new_nbytes);
  if (new_buffer) storage_value(*impl).set_value(std::move(new_buffer));
}

}  // namespace torch_tpu::aten
