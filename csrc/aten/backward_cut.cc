#include "aten/backward_cut.h"

#include <torch/csrc/autograd/engine.h>

#include "aten/fused_graph.h"

namespace torch_tpu::aten {

void cut_at_end_of_backward(int task, uint64_t owner) {
  // One callback per pass, thread and graph owner suffices (a second one
  // finds the graph already run).
  thread_local int queued_for = -1;
  thread_local uint64_t queued_owner = 0;
  if (task == queued_for && owner == queued_owner) return;
  queued_for = task;
  queued_owner = owner;
  torch::autograd::Engine::get_default_engine().queue_callback(
      [owner] { materialize_owner(owner, MaterializeReason::kBackward); });
}

}  // namespace torch_tpu::aten
