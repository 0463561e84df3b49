#include "aten/backward_cut.h"

#include <torch/csrc/autograd/engine.h>
#include <torch/csrc/autograd/graph_task.h>

namespace torch_tpu::aten {

void cut_at_end_of_backward(uint64_t owner, const std::function<void()>& run_graph) {
  // The engine sets the graph task on the threads that run a backward pass;
  // elsewhere the id is -1. One callback per pass, thread and graph owner
  // suffices (a second one finds the graph already run).
  const int task = torch::autograd::get_current_graph_task_id();
  thread_local int queued_for = -1;
  thread_local uint64_t queued_owner = 0;
  if (task < 0 || (task == queued_for && owner == queued_owner)) return;
  queued_for = task;
  queued_owner = owner;
  torch::autograd::Engine::get_default_engine().queue_callback(run_graph);
}

}  // namespace torch_tpu::aten
