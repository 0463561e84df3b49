// Launching with donation control, for the fused graph runner.
#pragma once

#include <c10/util/FunctionRef.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "hlo/types.h"
#include "pjrt/buffer.h"

namespace torch_tpu::aten {

// launch_program (op_runner.h), except that the inputs at `non_donatable`
// are not donated even where the program aliases them to a result (PJRT
// then gives that result a buffer of its own).
std::vector<pjrt::Buffer> launch_program_keeping(const std::string& key, const char* op,
                                                 c10::function_ref<std::string()> build,
                                                 const std::vector<pjrt::c::Buffer*>& args, int device,
                                                 const std::vector<int64_t>& non_donatable,
                                                 std::vector<hlo::TensorType>* types = nullptr);

}  // namespace torch_tpu::aten
