// Replaying a compiled graph's program without recording it again.
//
// torch.compile's graph runner (torch_tpu/_compile/graph_runner.py) runs a
// graph by recording its ops into a fused graph, which becomes one program.
// The program is the same on every call, but recording it again costs host
// time per node (dispatcher, lowering, key) on every call. A capture watches
// one call: the graph's inputs, the one fused graph that ran, where each of
// the program's arguments came from (an input's buffer, a fixed scalar, a
// random draw) and where each of its results went (an output's storage, an
// input's new value, a deferred check's flag). When two calls capture the
// same signature, later calls replay: the program is launched directly on
// the new inputs, the generator advanced as the ops would have advanced it,
// the inputs' storages updated and the outputs built with the traced
// layouts. Anything a capture cannot account for (a second graph, a buffer
// that is not an input, a result held elsewhere) makes it not replayable,
// and the runner keeps recording.
#pragma once

#include <ATen/core/Generator.h>
#include <ATen/core/Tensor.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aten/deferred_checks.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

struct CapturedGraph;  // what a replay needs (graph_capture.cc)
struct CaptureLog;     // what a capture observes while active

// A program launch that stands for one call of a captured graph.
class ReplayPlan {
 public:
  explicit ReplayPlan(std::shared_ptr<const CapturedGraph> graph);
  // The graph's tensor outputs on `inputs`, or nullopt when the inputs do
  // not fit the capture (layout, dtype, storages shared differently); the
  // caller then runs the graph normally.
  std::optional<std::vector<at::Tensor>> replay(const std::vector<at::Tensor>& inputs) const;

 private:
  std::shared_ptr<const CapturedGraph> graph_;
};

class GraphCapture {
 public:
  // Starts watching: runs pending fused work first, so the call's ops form
  // a graph of their own.
  explicit GraphCapture(const std::vector<at::Tensor>& inputs);
  ~GraphCapture();
  GraphCapture(const GraphCapture&) = delete;
  GraphCapture& operator=(const GraphCapture&) = delete;

  // Stops watching, after the call recorded its ops in fused mode; runs
  // them and works out the plan. `outputs`: the call's tensor outputs.
  void finish(const std::vector<at::Tensor>& outputs);
  // Stops watching without a plan (the call failed).
  void abandon();

  // Why the call cannot be replayed; empty when it can.
  const std::string& failure() const { return failure_; }
  // The failure may not recur on another call (another thread's work got
  // in the way).
  bool transient() const { return transient_; }
  // Everything a replay depends on, to compare two calls.
  const std::string& signature() const { return signature_; }
  // The replay plan (only once finished, when failure() is empty).
  std::shared_ptr<ReplayPlan> plan() const;

 private:
  void stop();
  void analyse(const std::vector<at::Tensor>& outputs);

  std::vector<at::Tensor> inputs_;
  // The inputs' storages and device values when the call began. The weak
  // references keep the values' addresses from being reused while they are
  // compared (DeviceBuffers come from make_shared: the control block and
  // the object are one allocation, alive while a weak reference is).
  std::vector<const c10::StorageImpl*> start_storages_;
  std::vector<const runtime::DeviceBuffer*> start_values_;
  std::vector<std::weak_ptr<runtime::DeviceBuffer>> start_refs_;
  int64_t graphs_run_ = 0;  // fused graphs run before the call began
  std::unique_ptr<CaptureLog> log_;
  bool active_ = false;
  bool finished_ = false;
  bool transient_ = false;
  std::string failure_;
  std::string signature_;
  std::shared_ptr<CapturedGraph> graph_;
};

// Hooks for what a capture must see (this one's and a device graph's,
// device_graph.h); no-ops unless a capture is active.
// A random op drew (seed, offset) from `generator`, advancing it by
// `increment`.
void note_random_draw(const at::Generator& generator, uint64_t seed, uint64_t offset, uint64_t increment);
// A deferred check registered `flag` (a pending result) with its error.
void note_deferred_check(const runtime::DeviceBuffer* flag, CheckError error, const std::string& message);

// A device value was copied to the host: the call's program may depend on
// it (a value read with item() and used as a scalar), so it is not replayed;
// inside a device graph capture, this raises.
void note_host_read();

}  // namespace torch_tpu::aten
