// Makes a tpu device current for a scope (allocation happens on the current
// device) and validates its index the way CUDA does.
#pragma once

#include <c10/core/Device.h>
#include <c10/util/Exception.h>

#include "aten/device_guard.h"
#include "runtime/current_device.h"

namespace torch_tpu::aten {

// The device a factory allocates on: the given one or the current one,
// validated (torch.AcceleratorError "invalid device ordinal", as CUDA).
inline c10::DeviceIndex checked_device_index(std::optional<c10::Device> device) {
  auto index = static_cast<c10::DeviceIndex>((device && device->has_index()) ? device->index()
                                                                              : runtime::current_device());
  check_device_index(index);
  return index;
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
