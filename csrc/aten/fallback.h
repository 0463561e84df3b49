// What happens to an op with no tpu lowering: NotImplementedError naming
// the op, or (opted in) a run on the CPU with a warning once per op.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace torch_tpu::aten {

void set_cpu_fallback_enabled(bool enabled);
bool cpu_fallback_enabled();
// Uses of the CPU fallback so far, per op name.
std::map<std::string, int64_t> cpu_fallback_counts();
void reset_cpu_fallback_counts();

}  // namespace torch_tpu::aten
