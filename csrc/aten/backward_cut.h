// Fused eager ends a graph where an autograd backward pass ends.
#pragma once

#include <cstdint>

namespace torch_tpu::aten {

// Called for every op that backward pass `task` records in fused eager,
// with the owner of the graph the op joins (fused_graph.cc): makes sure the
// pass's end runs that graph (MaterializeReason::kBackward), so the
// backward launches and runs while the host records what follows (the
// optimizer step), instead of waiting for the next read.
void cut_at_end_of_backward(int task, uint64_t owner);

}  // namespace torch_tpu::aten
