// The calling thread's current device (torch.tpu.set_device, device guards).
#pragma once

namespace torch_tpu::runtime {

int current_device();
// Does not validate `device`; callers check it against the device count.
void set_current_device(int device);

}  // namespace torch_tpu::runtime
