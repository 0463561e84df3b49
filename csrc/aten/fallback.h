// What happens to an op with no tpu lowering: NotImplementedError naming
// the op, or (opted in) a run on the CPU with a warning once per op.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace c10 {
class OperatorHandle;
}

namespace torch_tpu::aten {

// "aten::add.Tensor": an op's name and overload, as errors name it.
std::string op_name(const c10::OperatorHandle& op);

void set_cpu_fallback_enabled(bool enabled);
bool cpu_fallback_enabled();
// Uses of the CPU fallback so far, per op name.
std::map<std::string, int64_t> cpu_fallback_counts();
void reset_cpu_fallback_counts();

}  // namespace torch_tpu::aten
