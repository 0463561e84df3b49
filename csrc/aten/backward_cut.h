// Fused eager ends a graph where an autograd backward pass ends.
#pragma once

#include <cstdint>
#include <functional>

namespace torch_tpu::aten {

// Called for every op recorded in fused eager, with what runs the graph the
// op joins (owned by `owner`, fused_graph.cc). When the op belongs to a
// backward pass, `run_graph` is queued to run at the pass's end
// (MaterializeReason::kBackward): the step's forward and backward launch as
// one program and run while the host records what follows (the optimizer
// step), instead of waiting for the next read.
void cut_at_end_of_backward(uint64_t owner, const std::function<void()>& run_graph);

}  // namespace torch_tpu::aten
