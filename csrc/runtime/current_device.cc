#include "runtime/current_device.h"

namespace torch_tpu::runtime {

namespace {
thread_local int t_current_device = 0;
}

int current_device() { return t_current_device; }
void set_current_device(int device) { t_current_device = device; }

}  // namespace torch_tpu::runtime
