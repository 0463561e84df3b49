// Each op, lowered once, as a function that fused graphs call.
//
// Fused eager records an op by its key and its arguments only; the graph's
// StableHLO is built when its key misses the compile cache, from these
// fragments: the op's own program (strict eager's, one parameter per
// argument) imported as a private function, which the graph calls and XLA
// inlines. A training step's graph hits the cache at every step after the
// first few, so the lowerings run once per op key instead of once per
// recorded op (about 2 ms of host time per minGPT step).
#pragma once

#include <c10/util/FunctionRef.h>

#include <memory>
#include <string>
#include <vector>

#include "hlo/builder.h"
#include "hlo/module_import.h"

namespace torch_tpu::aten {

struct OpFragment {
  // One form of the op's function and how its results depend on its
  // parameters.
  struct Form {
    hlo::ImportedFunction function;
    hlo::Builder::ParameterFlow flow;
  };
  Form plain;
  // Where the plain form assumed its parameters to be buffers of their own
  // (a dynamic_update_slice that is unsafe if the caller's update reads the
  // operand's buffer): the guarded form, which assumes nothing, and when
  // the graph needs it (Builder::CallerDependency).
  std::vector<hlo::Builder::CallerDependency> dependencies;
  std::unique_ptr<Form> guarded;

  const std::vector<hlo::TensorType>& result_types() const { return plain.function.result_types; }
  // The form to call with `arguments` (values of the calling graph `b`).
  const Form& form_for(const hlo::Builder& b, const std::vector<hlo::Value>& arguments) const;
};

// Emits the op into a module of its own: binds one parameter per argument
// (in the op's argument order) and returns the op's results.
using EmitOpAlone = c10::function_ref<std::vector<hlo::Value>(hlo::Builder&)>;

// The fragment of the op under `op_key` (op_runner's key, which fixes its
// lowering), lowering it through `emit` on first use. Lowering errors
// propagate, and nothing is kept for the key then. `*lowered` says whether
// it lowered. Callers hold runtime::ValuesLock.
std::shared_ptr<const OpFragment> op_fragment(const char* op, const std::string& op_key, EmitOpAlone emit,
                                              bool* lowered);

}  // namespace torch_tpu::aten
