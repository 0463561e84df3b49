// Fused eager: ops recorded into one deferred graph per device and thread.
//
// Recording an op notes its key and binds its arguments to values the
// graph already has (a parameter per distinct device buffer, or the
// pending result of an earlier op), and returns pending DeviceBuffers for
// its results. The graph's StableHLO is built only when its key misses the
// compile cache, as calls of the ops' fragments (op_fragments.h). Nothing
// runs until a materialization: a read of a pending buffer (a copy to the
// host, item(), a program outside the graph), torch.tpu.synchronize(), a
// mode switch, or the graph reaching its op limit. The graph then becomes
// one program: its key is the sequence of the ops' own keys plus how their
// inputs are wired and which results are still referenced, so the same
// step of a training loop hits one cache entry whatever tensors it ran on,
// and results nobody holds any more are never computed (XLA drops them).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "aten/op_fragments.h"
#include "aten/operand.h"
#include "aten/scalar_input.h"
#include "runtime/device_buffer.h"

namespace torch_tpu::aten {

enum class MaterializeReason {
  kRead,         // a pending value was needed (host copy, item, print, ...)
  kSynchronize,  // torch.tpu.synchronize() and the like
  kSizeLimit,    // the graph reached TORCH_TPU_FUSED_MAX_OPS values (op results)
  kModeSwitch,   // leaving fused mode
  kExplicit,     // torch_tpu.materialize() (graph ends of torch.compile)
  kBackwardStart,  // a backward pass's first op on a graph recorded before the pass
  kBackward,     // the end of an autograd backward pass that recorded ops
  kThreadEnd,    // a thread ended with its graph open: run by the next op (any thread)
  kShapeChurn,   // an op that runs alone for shape churn (shape_churn.h) read a pending value
  kCount,
};

const char* materialize_reason_name(MaterializeReason reason);

// One argument of an op's own program, in its order (op_runner's
// program_arguments): a tensor's buffer, or a runtime scalar (always a
// parameter of its own, so equal scalar values never change the program).
struct OpArgument {
  const runtime::DeviceBufferPtr* buffer = nullptr;
  const ScalarInput* scalar = nullptr;
};

// Records an op on `device`; returns its results as pending buffers.
// `op_key` is the op's own cache key (op_runner's), which fixes its
// lowering; `emit` lowers it into a module of its own, called only the
// first time the key is seen (op_fragments.h). `operands` are its tensor
// operands (a backward pass's op joins the graph of its pending inputs);
// `describe` says it in words, called only while recompiles are explained.
std::vector<runtime::DeviceBufferPtr> record_op(int device, const char* op, const std::string& op_key,
                                                const std::vector<Operand>& operands,
                                                const std::vector<OpArgument>& arguments, EmitOpAlone emit,
                                                const std::function<std::string()>& describe);

// Whether an op about to be recorded on `device` runs as a program of its
// own instead, its shapes changing at every step while the rest of its
// graph's stay (shape_churn.h). If so, the graphs holding its pending
// operands have run, and the caller runs it as strict eager does.
bool run_alone_for_shape_churn(int device, const char* op, const std::vector<Operand>& operands);

// A host read of a device value on this thread: a sync point, where the
// positions shape churn tells ops apart by start over.
void end_op_sequence();

// The StableHLO text of the last fused graph that ran (empty if none).
std::string last_graph_text();

// An in-place op replaced a storage's value `old` by its pending result
// `now`. When `old` is a parameter of the graph, the
// program aliases it to `now` (tf.aliasing_output) and the launch donates
// it unless something besides the graph still holds it then: in-place
// updates reuse their buffer. Part of the graph's key.
void note_overwrite(const runtime::DeviceBufferPtr& old, const runtime::DeviceBufferPtr& now);

// Runs every pending graph: every device's, every thread's.
void materialize_all(MaterializeReason reason);

// Runs the pending graphs that this thread records into (graph ends of
// torch.compile, torch_tpu.materialize()): other threads' graphs are not
// cut at a point that depends on timing.
void materialize_this_thread(MaterializeReason reason);

// While on, the calling thread's ops record into its own graphs even in a
// backward pass (graph capture needs the call's ops in a graph of its own,
// which it runs at the call's end). Per thread.
void record_into_own_graphs(bool on);

// Runs the pending graphs of one recording owner (fused_graph.cc).
void materialize_owner(uint64_t owner, MaterializeReason reason);

// A sync point: runs the pending graphs, then waits until `device` has
// finished all its work (what torch.tpu.synchronize() does).
void synchronize_device(int device);

// A fused graph that ran, as graph capture (graph_capture.h) sees it.
struct RanGraph {
  int device = 0;
  std::string key;   // the program's cache key
  std::string name;  // for messages
  // The program's arguments in order: the device buffer a tensor parameter
  // was bound to (identity only; the graph no longer holds it), or the
  // runtime scalar a scalar parameter carries.
  struct Parameter {
    const runtime::DeviceBuffer* buffer = nullptr;
    std::optional<ScalarInput> scalar;
  };
  std::vector<Parameter> parameters;
  // The program's results in order (the buffers they fulfilled).
  std::vector<std::weak_ptr<runtime::DeviceBuffer>> results;
  // (parameter, result) pairs the program aliases: in-place updates.
  std::vector<std::pair<int64_t, int64_t>> aliases;
  // The program's StableHLO text (for a compile after a cache reset).
  std::function<std::string()> text;
};

// How many fused graphs have run in this process (never reset).
int64_t graphs_run_total();

// Called with each graph that runs from now on; null stops. Graphs record
// the origin of their parameters only while an observer is set. There is
// one observer: setting one while another is set returns false and
// changes nothing.
using GraphObserver = std::function<void(RanGraph)>;
bool set_graph_observer(GraphObserver observer);

// ---- device graph capture (device_graph.h) ---------------------------------
//
// While a capture is active, the capturing thread's graphs (and the
// backward passes that join them) hold the captured ops: no backward pass
// launches them at its start or cuts them at its end, the size limit does
// not cut them, and nothing runs them but the capture's end. A read of
// their values, a synchronize or a mode switch on the capturing thread
// raises; other threads' synchronizes leave them pending.

// Makes the calling thread's graphs the capture's; returns false when a
// capture is already active.
bool begin_capture_recording();
// Runs the capture's graphs (the capture's end, on any thread), then ends
// the capture recording, even when running fails.
void finish_capture_recording();
namespace detail {
// The capture's recording owner; 0 while none records (fused_graph.cc).
extern std::atomic<uint64_t> capture_owner;
}  // namespace detail
// Whether a capture is recording (any thread): one relaxed load, inline,
// as the hooks on every op's operands and results ask it.
inline bool capture_recording() { return detail::capture_owner.load(std::memory_order_relaxed) != 0; }
// Whether the calling thread is the capturing one.
bool capturing_thread();
// Whether `buffer` is a pending value of the capture's graphs.
bool pending_in_capture(const runtime::DeviceBuffer& buffer);
// Why the capture was refused a run of its graphs (a read of a captured
// value, a synchronize), if it was; empty otherwise. Cleared by
// begin_capture_recording.
std::string capture_refusal();

struct FusedStats {
  int64_t materializations[static_cast<int>(MaterializeReason::kCount)] = {};
  int64_t ops_recorded = 0;
  int64_t ops_lowered = 0;       // lowerings run: once per distinct op key (op_fragments.h)
  int64_t graphs_run = 0;
  int64_t graph_ops_run = 0;     // ops in the graphs that ran
  int64_t results_computed = 0;  // op results still referenced at the run
  int64_t results_dropped = 0;   // op results nobody held any more: not computed
  int64_t buffers_donated = 0;   // parameters whose memory a result reused
  int64_t chain_barriers = 0;    // values computed once to cut a run of cheap ops (fused_graph.cc)
  int64_t kernel_cuts = 0;       // results output only to bound a kernel's size (fused_graph.cc)
  int64_t shape_churn_ops = 0;   // ops run as programs of their own for shape churn (shape_churn.h)
  int64_t graphs_replayed = 0;   // compiled graphs launched from a capture (graph_capture.h)
};
FusedStats fused_stats();
void count_graph_replayed();
void reset_fused_stats();

}  // namespace torch_tpu::aten
