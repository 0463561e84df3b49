// Custom kernels: a StableHLO module called as one op on tpu tensors.
//
// A kernel is imported once (hlo::import_module) under a symbol prefix
// derived from a fingerprint of its text, so the op's cache key (its name
// plus that symbol) changes whenever the kernel's text does: an edited
// kernel never hits a stale program in the disk tier. Running it goes
// through run_op like every ATen op, so it launches as its own program in
// strict eager, joins the pending graph in fused eager and inside
// torch.compile graphs, and blocks with checks in debug eager.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

#include "hlo/module_import.h"

namespace torch_tpu::aten {

struct CustomKernel {
  std::string op_name;  // names the kernel in keys, messages and profiles
  hlo::ImportedFunction function;
};

// Imports `module_text` (its @main is the kernel); throws hlo::HloError on
// text the importer refuses. The kernel lives as long as the process.
std::shared_ptr<const CustomKernel> import_custom_kernel(std::string op_name, std::string_view module_text);

// Runs the kernel on `inputs` (tpu tensors of its parameter types, on one
// device) and returns its results as new tpu tensors.
std::vector<at::Tensor> run_custom_kernel(const CustomKernel& kernel, const std::vector<at::Tensor>& inputs);

}  // namespace torch_tpu::aten
