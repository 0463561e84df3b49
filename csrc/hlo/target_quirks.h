// Weaknesses of the compiler behind the plugin that the lowerings work
// around, chosen once per process when the runtime knows its platform.
// Every lowering emits the same text on every platform except where one of
// these says otherwise; a quirk's workaround must compute the same values.
#pragma once

namespace torch_tpu::hlo {

struct TargetQuirks {
  // XLA's CPU compiler emits a reduction that keeps the innermost
  // dimension (a column sum, such as a bias gradient's sum over the batch)
  // with strided scalar loads when the reduce is fused with its producer
  // or reduces several dimensions at once, and vectorizes it only as an
  // unfused reduce of one dimension. Builder::reduce then merges adjacent
  // dimensions and puts the input behind an optimization barrier
  // (docs/design.md, "Reductions on the CPU plugin").
  bool unfused_column_reductions = false;
};

const TargetQuirks& target_quirks();
// Called once, before anything is lowered (runtime initialization).
void set_target_quirks(const TargetQuirks& quirks);

}  // namespace torch_tpu::hlo
