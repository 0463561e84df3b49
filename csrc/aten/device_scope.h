// Makes a tpu device current for a scope (allocation happens on the current
// device) and validates its index the way CUDA does.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include "runtime/current_device.h"
#include "runtime/runtime.h"

namespace torch_tpu::aten {

inline int device_count() {
  return static_cast<int>(runtime::Runtime::get().client().devices().size());
}

inline c10::DeviceIndex checked_device_index(std::optional<c10::Device> device) {
  int index = (device && device->has_index()) ? device->index() : runtime::current_device();
  int count = device_count();
  TORCH_CHECK(index >= 0 && index < count, "tpu: invalid device ordinal ", index,
              " (this process has ", count, " tpu device", count == 1 ? "" : "s", ")");
  return static_cast<c10::DeviceIndex>(index);
}

class CurrentDeviceScope {
 public:
  explicit CurrentDeviceScope(int device) : previous_(runtime::current_device()) {
    runtime::set_current_device(device);
  }
  ~CurrentDeviceScope() { runtime::set_current_device(previous_); }
  CurrentDeviceScope(const CurrentDeviceScope&) = delete;
  CurrentDeviceScope& operator=(const CurrentDeviceScope&) = delete;

 private:
  int previous_;
};

}  // namespace torch_tpu::aten
