// Shared pieces of the indexing glue (register_indexing.cc,
// register_masked.cc, and the bound checks of embedding / nll_loss in
// register_nn.cc): running a lowering that returns a result with its
// out-of-range flag, and registering that flag as a deferred check.
#pragma once

#include <ATen/core/Tensor.h>

#include <functional>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "aten/op_runner.h"
#include "ops/indexing/gather_scatter.h"

namespace torch_tpu::aten {

using CheckedBody = std::function<ops::Checked(hlo::Builder& b, const std::vector<hlo::Value>& tensors,
                                               const std::vector<hlo::Value>& scalars)>;

// Runs the op; its result comes back new, its flag goes to defer_check.
at::Tensor run_checked(const OpCall& call, const CheckedBody& body, CheckError error, std::string message);

// Runs the op writing its result into `dst` (in-place / out=); the flag goes to defer_check.
void run_checked_into(const OpCall& call, const CheckedBody& body, const at::Tensor& dst, CheckError error,
                      std::string message);

// A class target outside [0, classes) other than ignore_index raises
// IndexError("Target ... is out of bounds.") at the next sync, as on CPU.
void defer_target_check(const at::Tensor& target, int64_t classes, int64_t ignore_index);

void append_int(std::string& key, int64_t v);

}  // namespace torch_tpu::aten
