// Fused eager ends a graph where an autograd backward pass ends.
#pragma once

namespace torch_tpu::aten {

// Called for every op recorded in fused eager. When the op belongs to a
// backward pass, makes sure the pass's end materializes the pending graphs
// (MaterializeReason::kBackward): the step's forward and backward launch as
// one program and run while the host records what follows (the optimizer
// step), instead of waiting for the next read.
void cut_at_end_of_backward();

}  // namespace torch_tpu::aten
