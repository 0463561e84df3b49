#include "aten/backward_cut.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

#include "aten/fused_graph.h"

namespace torch_tpu::aten {

void cut_at_end_of_backward() {
  // The engine sets the graph task on the threads that run a backward pass;
  // elsewhere the id is -1. One callback per pass and thread suffices (a
  // second one finds the graph already run).
  const int task = torch::autograd::get_current_graph_task_id();
  thread_local int queued_for = -1;
  if (task < 0 || task == queued_for) return;
  queued_for = task;
  torch::autograd::Engine::get_default_engine().queue_callback(
      [] { materialize_all(MaterializeReason::kBackward); });
}

}  // namespace torch_tpu::aten
