// Device indices, the current device and lazy runtime initialization, as
// the registration layer (guard, hooks, generator, torch.tpu) sees them.
//
// The runtime (plugin + client) is created by the Python layer, which knows
// how to find the plugin. C++ code that needs the runtime and may raise
// calls ensure_runtime(), which runs the initializer torch_tpu registered at
// import (torch.tpu._lazy_init). Code that must never raise reads
// runtime_device_count(), which is 0 until the runtime exists. (The guard's
// deviceCount() is the one exception that initializes: see device_guard.cc.)
#pragma once

#include <c10/core/Device.h>

#include <functional>

namespace torch_tpu::aten {

// Devices of the runtime; 0 when it is not initialized. Never throws.
c10::DeviceIndex runtime_device_count() noexcept;

// Creates the runtime if needed through the registered initializer; throws a
// c10::Error naming the cause when that is impossible (no initializer, no
// plugin, a forked child of a process that used the device).
void ensure_runtime();

// Throws c10::AcceleratorError ("invalid device ordinal") unless
// 0 <= index < runtime_device_count(); initializes the runtime first.
void check_device_index(c10::DeviceIndex index);

// `index`, or the current device when it is negative (-1: "the current tpu").
c10::DeviceIndex resolve_device_index(c10::DeviceIndex index);

c10::DeviceIndex current_device_index() noexcept;
// Makes `index` current after validating it; returns the previous current
// device. A negative index changes nothing and returns -1.
c10::DeviceIndex exchange_device_index(c10::DeviceIndex index);

// Callbacks from the Python layer; set once, at import of torch_tpu.
// `initialize` creates the runtime (and may raise); `is_available` says,
// without loading the plugin, whether one could be loaded.
struct RuntimeCallbacks {
  std::function<void()> initialize;
  std::function<bool()> is_available;
};
void set_runtime_callbacks(RuntimeCallbacks callbacks);
// is_available of the callbacks; false when none is registered or it fails.
bool probe_available() noexcept;

// True in a child forked after the parent created the runtime: the PJRT
// client's threads did not survive the fork, so the device is unusable.
bool in_bad_fork() noexcept;

}  // namespace torch_tpu::aten
