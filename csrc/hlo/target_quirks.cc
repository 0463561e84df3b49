#include "hlo/target_quirks.h"

namespace torch_tpu::hlo {

namespace {
TargetQuirks g_quirks;
}  // namespace

const TargetQuirks& target_quirks() { return g_quirks; }

void set_target_quirks(const TargetQuirks& quirks) { g_quirks = quirks; }

}  // namespace torch_tpu::hlo
