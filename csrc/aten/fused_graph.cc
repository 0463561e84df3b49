#include "aten/fused_graph.h"

#include <ATen/record_function.h>
#include <c10/util/Exception.h>
#include <c10/util/flat_hash_map.h>
#include <torch/csrc/autograd/graph_task.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "aten/backward_cut.h"
#include "aten/diagnostics.h"
#include "aten/eager_mode.h"
#include "aten/launch.h"
#include "aten/memory_limit.h"
#include "aten/op_runner.h"
#include "aten/scalar_cache.h"
#include "aten/shape_churn.h"
#include "cache/compile_cache.h"
#include "runtime/config.h"
#include "runtime/device_queue.h"
#include "runtime/storage_value.h"

namespace torch_tpu::aten {

std::atomic<uint64_t> detail::capture_owner{0};

namespace {

using runtime::DeviceBuffer;
using runtime::DeviceBufferPtr;

FusedStats& stats() {
  static FusedStats s;
  return s;
}

std::atomic<int64_t> runs_total{0};

int64_t max_ops() {
  static const int64_t n = [] {
    int64_t v = config::get_int(config::kFusedMaxOps).value_or(2000);
    TORCH_CHECK_VALUE(v > 0, config::kFusedMaxOps.name, " must be positive, got ", v);
    return v;
  }();
  return n;
}

// The longest run of cheap elementwise ops a graph lets its values chain
// (0: no limit); see DeferredGraph::limit_chains.
int64_t max_chain() {
  static const int64_t n = [] {
    int64_t v = config::get_int(config::kFusedMaxChain).value_or(32);
    TORCH_CHECK_VALUE(v >= 0, config::kFusedMaxChain.name, " must be 0 or positive, got ", v);
    return std::min<int64_t>(v, std::numeric_limits<uint16_t>::max() / 2);
  }();
  return n;
}

// The most elementwise ops a graph lets XLA fuse into one kernel (0: no
// limit); see DeferredGraph::limit_kernels.
int64_t max_kernel() {
  static const int64_t n = [] {
    int64_t v = config::get_int(config::kFusedMaxKernel).value_or(256);
    TORCH_CHECK_VALUE(v >= 0, config::kFusedMaxKernel.name, " must be 0 or positive, got ", v);
    return v;
  }();
  return n;
}

bool split_at_backward_start() {
  static const bool on = config::get_bool(config::kFusedSplitBackward);
  return on;
}

void append_id(std::string& key, char tag, size_t id) {
  const uint32_t v = static_cast<uint32_t>(id);
  key.push_back(tag);
  key.append(reinterpret_cast<const char*>(&v), sizeof v);
}

class DeferredGraph;

// The device graph capture's thread, whether its end is running its
// graphs, and why a run was refused (fused_graph.h; its owner is
// detail::capture_owner). Under runtime::ValuesLock.
std::thread::id g_capture_thread;
bool g_capture_finishing = false;
std::string g_capture_refusal;

bool is_capture_owner(uint64_t owner) {
  return owner != 0 && owner == detail::capture_owner.load(std::memory_order_acquire);
}

// A captured graph's values are asked for before the capture's end.
[[noreturn]] void refuse_capture_run(MaterializeReason reason);

GraphObserver& graph_observer() {
  static auto* observer = new GraphObserver();
  return *observer;
}

// The last graph that ran, for last_graph_text().
std::shared_ptr<DeferredGraph>& last_graph() {
  static auto* graph = new std::shared_ptr<DeferredGraph>();
  return *graph;
}

// Who records into a graph: each thread has graphs of its own, so threads
// recording at the same time do not interleave their ops in one graph (the
// interleaving would be part of the key, and nearly every graph would
// compile anew). A backward pass's ops, which the autograd engine runs on
// its device thread (one for every thread's passes), join the graph holding
// their pending inputs: the forward's graph, so that a training step stays
// one program; a pass with no pending input has a graph of its own.
using Owner = uint64_t;
constexpr Owner kPassOwner = Owner{1} << 63;  // | the graph task's id

Owner pass_owner(int task) { return kPassOwner | static_cast<uint32_t>(task); }

// Owners whose thread has ended, their graphs still open: run by the next
// op recorded or graph materialized on any thread, so that the work a
// thread left (an optimizer's last update) is not held until a synchronize.
std::mutex g_ended_mutex;
std::vector<Owner> g_ended_owners;
std::atomic<bool> g_owners_ended{false};

// Registers the thread's owner as ended when the thread ends. It runs no
// graph there: other thread-local state of the thread may be gone by then.
struct ThreadOwner {
  Owner owner;
  ~ThreadOwner() {
    std::lock_guard<std::mutex> lock(g_ended_mutex);
    g_ended_owners.push_back(owner);
    g_owners_ended.store(true, std::memory_order_release);
  }
};

Owner this_thread_owner() {
  static std::atomic<Owner> next{1};
  thread_local const ThreadOwner owner{next.fetch_add(1, std::memory_order_relaxed)};
  return owner.owner;
}

// The open graphs of each owner, per device (all under runtime::ValuesLock).
using DeviceGraphs = std::array<std::shared_ptr<DeferredGraph>, runtime::kMaxDevices>;
std::unordered_map<Owner, DeviceGraphs>& open_graphs() {
  static auto* graphs = new std::unordered_map<Owner, DeviceGraphs>();
  return *graphs;
}

std::shared_ptr<DeferredGraph>& open_graph(Owner owner, int device) {
  TORCH_CHECK(device >= 0 && device < runtime::kMaxDevices, "tpu device index ", device, " is out of range");
  return open_graphs()[owner][device];
}

// Forgets a graph that ran (or is about to) if it is still its owner's
// open one; an owner left with no open graph is dropped, so threads that
// ended leave nothing behind.
void close_graph(Owner owner, int device, const DeferredGraph* graph) {
  auto it = open_graphs().find(owner);
  if (it == open_graphs().end() || it->second[device].get() != graph) return;
  it->second[device].reset();
  for (const auto& open : it->second) {
    if (open) return;
  }
  open_graphs().erase(it);
}

// The open graphs of one owner (every owner when null), in a list: running
// them changes the table.
std::vector<std::shared_ptr<DeferredGraph>> graphs_of(const Owner* owner) {
  std::vector<std::shared_ptr<DeferredGraph>> graphs;
  for (const auto& [who, per_device] : open_graphs()) {
    if (owner && who != *owner) continue;
    for (const auto& graph : per_device) {
      if (graph) graphs.push_back(graph);
    }
  }
  return graphs;
}

// Where an owner's next graph takes up the positions of its ops (shape
// churn): set when its graph was cut for an op that runs alone, or by such
// an op while it has no open graph; dropped at a sync point.
std::unordered_map<Owner, uint64_t>& carried_structures() {
  static auto* structures = new std::unordered_map<Owner, uint64_t>();
  return *structures;
}

uint64_t take_carried_structure(Owner owner) {
  auto it = carried_structures().find(owner);
  if (it == carried_structures().end()) return shape_churn::kEmpty;
  const uint64_t structure = it->second;
  carried_structures().erase(it);
  return structure;
}

// The arguments must be what the fragment's parameters were lowered for: a
// mismatch (a change in op_runner's argument order) would otherwise swap
// buffers silently whenever the graph's key hits the cache.
void check_arguments(const char* op, const OpFragment& fragment, const std::vector<OpArgument>& arguments) {
  const std::vector<hlo::TensorType>& types = fragment.plain.function.parameter_types;
  TORCH_INTERNAL_ASSERT(types.size() == arguments.size(), op, ": ", arguments.size(),
                        " arguments for a lowering of ", types.size());
  for (size_t i = 0; i < arguments.size(); ++i) {
    const bool same = arguments[i].buffer ? (*arguments[i].buffer)->type() == types[i]
                                          : hlo::TensorType::scalar(arguments[i].scalar->type) == types[i];
    TORCH_INTERNAL_ASSERT(same, op, ": argument ", i, " does not have the type its lowering took");
  }
}

class DeferredGraph : public runtime::PendingSource, public std::enable_shared_from_this<DeferredGraph> {
 public:
  DeferredGraph(Owner owner, int device, uint64_t structure)
      : owner_(owner),
        device_(device),
        observed_(static_cast<bool>(graph_observer())),
        // Reads TORCH_TPU_FUSED_SHAPE_CHURN: a bad setting raises here,
        // before the graph takes its first op.
        churn_tracked_(shape_churn::enabled() && !thread_has_own_eager_mode() && !is_capture_owner(owner)),
        structure_(structure) {
    key_.append("fused", 6);
  }

  int64_t size() const { return static_cast<int64_t>(op_names_.size()); }
  // What the size limit counts: the values the program computes. One
  // _foreach_ op over n tensors is n values (an optimizer step over a large
  // model's parameters, thousands of them); counting it as one op let a
  // loop of optimizer steps grow a graph XLA took minutes and gigabytes to
  // compile.
  int64_t values() const { return std::max(size(), static_cast<int64_t>(results_.size())); }
  // The backward pass that recorded the graph's last op (-1: none did).
  int last_pass() const { return last_pass_; }
  void set_last_pass(int task) { last_pass_ = task; }
  Owner owner() const { return owner_; }
  int device() const { return device_; }
  // The names of the ops its owner recorded or ran alone since its last
  // sync point (shape_churn::after), which name the position of its next
  // op; an op run alone for shape churn takes a position too.
  uint64_t structure() const { return structure_; }
  void set_structure(uint64_t structure) { structure_ = structure; }
  bool ran() const { return ran_; }

  std::vector<DeviceBufferPtr> record(const char* op, const std::string& op_key,
                                      const std::vector<OpArgument>& arguments, EmitOpAlone emit,
                                      const std::function<std::string()>& describe) {
    // Found (or lowered) before the graph changes: a lowering error leaves
    // the graph as it was.
    RecordedOp recorded;
    bool lowered = false;
    recorded.fragment = op_fragment(op, op_key, emit, &lowered);
    if (lowered) stats().ops_lowered++;
    check_arguments(op, *recorded.fragment, arguments);
    append_id(key_, 'k', op_key.size());
    key_.append(op_key);
    op_names_.push_back(op);
    if (churn_tracked_) {
      structure_ = shape_churn::after(structure_, op);
      positions_.push_back(structure_);
      op_key_hashes_.push_back(std::hash<std::string>{}(op_key));
    }
    if (explain_recompiles()) {
      descriptions_.push_back("op " + std::to_string(op_names_.size() - 1) + ": " + describe());
    }
    recorded.arguments.reserve(arguments.size());
    try {
      for (const OpArgument& argument : arguments) {
        if (argument.buffer) {
          recorded.arguments.push_back(bind(*argument.buffer));
        } else {
          key_.push_back('s');
          recorded.arguments.push_back(add_parameter(cached_scalar_buffer(device_, *argument.scalar), argument.scalar));
        }
      }
    } catch (...) {
      // Binding ran another graph, which failed; the key records the
      // failure so it still names the graph's ops.
      key_.push_back('!');
      throw;
    }
    const std::vector<uint16_t> chains = limit_chains(recorded);
    const std::vector<uint32_t> kernels = limit_kernels(recorded, arguments);
    recorded.first_result = static_cast<uint32_t>(results_.size());
    auto self = shared_from_this();
    const std::vector<hlo::TensorType>& types = recorded.fragment->result_types();
    std::vector<DeviceBufferPtr> out;
    out.reserve(types.size());
    for (size_t i = 0; i < types.size(); ++i) {
      auto buffer = std::make_shared<DeviceBuffer>(types[i], device_, self);
      result_ids_[buffer.get()] = static_cast<uint32_t>(results_.size());
      add_result(buffer, types[i].dtype, chains[i], kernels[i]);
      out.push_back(std::move(buffer));
    }
    ops_.push_back(std::move(recorded));
    return out;
  }

  void materialize() override { run(MaterializeReason::kRead); }

  void run(MaterializeReason reason) {
    runtime::ValuesLock lock;
    if (ran_) {
      TORCH_CHECK(error_.empty(), error_);
      return;
    }
    if (is_capture_owner(owner_) && !g_capture_finishing) refuse_capture_run(reason);
    ran_ = true;
    // Cut for an op that runs alone, the owner's next graph goes on from
    // this one's positions; any other run is a sync point, which starts
    // them over.
    if (reason == MaterializeReason::kShapeChurn) {
      carried_structures()[owner_] = structure_;
    } else {
      carried_structures().erase(owner_);
    }
    auto self = shared_from_this();  // the open slot may hold the last reference
    close_graph(owner_, device_, this);
    last_graph() = self;

    // Only results someone still holds become program outputs.
    std::vector<DeviceBufferPtr> live;
    std::vector<size_t> output_of_result(results_.size(), kNotOutput);
    std::string key = std::move(key_);
    const size_t recorded_key_size = key.size();
    key.push_back('|');
    for (size_t i = 0; i < results_.size(); ++i) {
      DeviceBufferPtr buffer = results_[i].lock();
      if (!buffer || !buffer->pending() || buffer->source().get() != this) continue;
      output_of_result[i] = live.size();
      live.push_back(std::move(buffer));
      live_results_.push_back(static_cast<uint32_t>(i));
      append_id(key, 'l', i);
    }
    if (!live.empty()) {
      // Values cut to bound a kernel's size (limit_kernels) that a live
      // result needs are outputs too; the program drops them after.
      cut_outputs_ = needed_cuts();
      for (uint32_t c : cut_outputs_) append_id(key, 'c', c);
    }
    if (live.empty()) {
      count_run(reason, 0, 0);
      release_inputs();
      report_to_observer(key, live, {});
      return;
    }

    const std::vector<int64_t> keep = alias_overwritten(output_of_result, live, key);
    std::vector<pjrt::c::Buffer*> args;
    args.reserve(parameters_.size());
    for (const DeviceBufferPtr& p : parameters_) args.push_back(p->get());
    const std::string name = describe();
    std::vector<pjrt::Buffer> outputs;
    const uint64_t compiles_before = cache::CompileCache::compiles_on_this_thread();
    try {
      outputs = launch_program_keeping(key, name.c_str(), [&] { return text(); }, args, device_, keep);
    } catch (const MemoryLimitError&) {
      // Refused before launching: nothing ran and no input was donated, so
      // the graph stays pending as recorded, and a later read runs it once
      // memory was freed or the limit raised (what it outputs and aliases
      // is worked out again then: results may have died meanwhile).
      key.resize(recorded_key_size);
      key_ = std::move(key);
      live_results_.clear();
      cut_outputs_.clear();
      aliases_.clear();
      built_ = false;
      text_.clear();
      ran_ = false;
      throw;
    } catch (const c10::Error& e) {
      error_ = e.what_without_backtrace();
      throw;
    } catch (const std::exception& e) {
      error_ = e.what();
      throw;
    }
    TORCH_INTERNAL_ASSERT(outputs.size() == live.size() + cut_outputs_.size(), name, ": wrong number of results");
    if (churn_tracked_ && cache::CompileCache::compiles_on_this_thread() != compiles_before) {
      shape_churn::note_compile(structure_, op_key_hashes_, positions_);
    }
    const uint64_t run_number =
        count_run(reason, static_cast<int64_t>(live.size()), static_cast<int64_t>(aliases_.size() - keep.size()));
    // The program is launched: the graph holds no device memory any more,
    // only what last_graph_text() needs. Donated inputs go before the
    // results are counted, so the statistics see the memory reused.
    release_inputs();
    for (size_t i = 0; i < live.size(); ++i) live[i]->fulfill(std::move(outputs[i]), run_number);
    report_to_observer(key, live, name);
  }

  // Counts a run in the statistics; returns its number among all graphs' runs.
  uint64_t count_run(MaterializeReason reason, int64_t computed, int64_t donated) {
    auto& s = stats();
    s.materializations[static_cast<int>(reason)]++;
    s.graphs_run++;
    s.graph_ops_run += size();
    s.results_computed += computed;
    s.results_dropped += static_cast<int64_t>(results_.size()) - barriers_ - computed;
    s.chain_barriers += barriers_;
    s.kernel_cuts += static_cast<int64_t>(cut_outputs_.size());
    s.buffers_donated += donated;
    return static_cast<uint64_t>(runs_total.fetch_add(1, std::memory_order_relaxed) + 1);
  }

  // Tells graph capture what ran: the key, where each argument came from,
  // the results and the aliasing.
  void report_to_observer(const std::string& key, const std::vector<DeviceBufferPtr>& live, std::string name) {
    if (!observed_ || !graph_observer()) return;
    RanGraph graph;
    graph.device = device_;
    graph.key = key;
    graph.name = std::move(name);
    graph.parameters = std::move(parameter_origins_);
    graph.results.assign(live.begin(), live.end());
    graph.results.resize(live.size() + cut_outputs_.size());  // dropped at once
    graph.aliases = aliases_;
    auto self = shared_from_this();
    graph.text = [self] {
      runtime::ValuesLock lock;
      return self->text();
    };
    graph_observer()(std::move(graph));
  }

  void release_inputs() {
    parameters_.clear();
    parameter_ids_.clear();
    result_ids_.clear();
  }

  // The module text (built once: on a compile, or when asked for later):
  // @main calls each recorded op's fragment on the values bound to its
  // arguments and returns the live results.
  const std::string& text() {
    if (!built_) {
      hlo::Builder b("fused");
      std::vector<hlo::Value> parameters;
      parameters.reserve(parameter_types_.size());
      for (const hlo::TensorType& type : parameter_types_) parameters.push_back(b.parameter(type));
      std::vector<hlo::Value> results(results_.size());
      std::vector<hlo::Value> arguments;
      for (const RecordedOp& op : ops_) {
        for (const Barrier& barrier : op.barriers) {
          results[barrier.result] = barrier_copy(b, results[barrier.source], parameters[barrier.one]);
        }
        arguments.clear();
        for (uint32_t a : op.arguments) arguments.push_back(a & kResultBit ? results[a & ~kResultBit] : parameters[a]);
        const OpFragment::Form& form = op.fragment->form_for(b, arguments);
        std::vector<hlo::Value> outs = b.call_function(form.function, arguments, form.flow);
        std::move(outs.begin(), outs.end(), results.begin() + op.first_result);
      }
      std::vector<hlo::Value> outputs;
      outputs.reserve(live_results_.size());
      // A barriered value is returned as the barrier: the same value, and
      // then XLA computes the run before it once.
      for (uint32_t r : live_results_) outputs.push_back(results[barrier_of_[r] != kNoBarrier ? barrier_of_[r] : r]);
      for (uint32_t r : cut_outputs_) outputs.push_back(results[barrier_of_[r] != kNoBarrier ? barrier_of_[r] : r]);
      for (const auto& [param, out] : aliases_) b.alias_parameter(param, out);
      text_ = b.build(outputs);
      built_ = true;
      // Graphs are told apart by their first op: a training step's forward
      // and backward graphs are not compared with each other.
      const std::string family = std::string("fused graph from ") + (op_names_.empty() ? "nothing" : op_names_[0]);
      note_compile(family, [&] { return descriptions_.empty() ? op_names() : descriptions_; });
      dump_program("fused_graph", text_);
    }
    return text_;
  }

  std::string last_text() { return ran_ && error_.empty() ? text() : std::string(); }

 private:
  // Aliases each overwritten parameter to the result that replaced it (when
  // that result is an output); returns the aliased parameters that are
  // still held elsewhere, which the launch must not donate.
  std::vector<int64_t> alias_overwritten(const std::vector<size_t>& output_of_result,
                                         const std::vector<DeviceBufferPtr>& live, std::string& key) {
    std::vector<int64_t> keep;
    std::vector<bool> aliased(parameters_.size()), taken(live.size());
    for (const auto& [param, result] : overwrites_) {
      const size_t out = output_of_result[result];
      if (out == kNotOutput || aliased[param] || taken[out]) continue;
      if (!(live[out]->type() == parameters_[param]->type())) continue;
      aliased[param] = taken[out] = true;
      aliases_.emplace_back(static_cast<int64_t>(param), static_cast<int64_t>(out));
      append_id(key, 'a', param);
      append_id(key, 't', out);
      if (parameters_[param].use_count() > 1) keep.push_back(static_cast<int64_t>(param));
    }
    return keep;
  }

 public:
  void overwrite(const DeviceBufferPtr& old, const DeviceBufferPtr& now) {
    auto result = result_ids_.find(now.get());
    if (result == result_ids_.end()) return;
    if (old->pending() && old->source().get() == this) {
      // A later update of the same storage (x.add_(1); x.mul_(3)): the
      // parameter's memory goes to the storage's newest value.
      const uint32_t previous = result_ids_.at(old.get());
      for (auto& entry : overwrites_) {
        if (entry.second != previous) continue;
        entry.second = result->second;
        append_id(key_, 'u', result->second);
      }
      return;
    }
    auto param = parameter_ids_.find(old.get());
    if (param == parameter_ids_.end()) return;
    overwrites_.emplace_back(param->second, result->second);
    append_id(key_, 'w', param->second);
    append_id(key_, 'v', result->second);
  }

 private:
  static constexpr size_t kNotOutput = static_cast<size_t>(-1);

  // An op's argument inside the graph: a parameter's index, or a result's
  // index with kResultBit set.
  static constexpr uint32_t kResultBit = uint32_t{1} << 31;

  // A barrier (limit_chains): result `result` is result `source` divided
  // by parameter `one`, a 1 of its type.
  struct Barrier {
    uint32_t result;
    uint32_t source;
    uint32_t one;
  };

  struct RecordedOp {
    std::shared_ptr<const OpFragment> fragment;
    std::vector<uint32_t> arguments;
    uint32_t first_result = 0;  // its results are results_[first_result, + count)
    std::vector<Barrier> barriers;  // computed just before the op
  };

  static constexpr uint32_t kNoBarrier = std::numeric_limits<uint32_t>::max();

  void add_result(const DeviceBufferPtr& buffer, ElementType dtype, uint16_t chain, uint32_t kernel) {
    results_.emplace_back(buffer);
    dtypes_.push_back(dtype);
    chains_.push_back(chain);
    kernel_ops_.push_back(kernel);
    read_.push_back(0);
    barrier_of_.push_back(kNoBarrier);
  }

  // A graph's values can chain cheap elementwise ops (add, multiply,
  // select, reshape) without end: a recurrence whose every step is kept,
  // or a recurrent network's cell state saved for backward. XLA's fusion
  // copies such ops into every consumer that needs them, so each kept step
  // would recompute the run from its start: compile time and run time
  // quadratic in its length (a 200-step `x = x * a + b` kept whole took
  // 29 s to compile, 1 s cut). Runs are therefore cut at max_chain() ops:
  // an argument whose run would grow past it is first divided by a 1 the
  // program takes as a parameter (a barrier: the same value, computed
  // once; barrier_copy), and this op and every later one read that.
  // Returns the runs ending at the op's results.
  std::vector<uint16_t> limit_chains(RecordedOp& recorded) {
    const std::vector<hlo::Builder::ResultChain>& chains = recorded.fragment->plain.flow.chains;
    const int64_t limit = max_chain();
    auto run_of = [&](uint32_t argument) -> int64_t {
      return argument & kResultBit ? chains_[argument & ~kResultBit] : 0;
    };
    if (limit > 0) {
      // The arguments to cut, and the 1s they divide by: the 1s are found
      // (uploaded, which can fail) before the graph changes.
      std::vector<std::pair<uint32_t, uint32_t>> cuts;  // (argument, one)
      for (const hlo::Builder::ResultChain& chain : chains) {
        for (const auto& [parameter, length] : chain.parameters) {
          const uint32_t argument = recorded.arguments[parameter];
          // (A run that starts at the argument, 0 long, is the op's own.)
          const int64_t run = run_of(argument);
          if (run == 0 || run + length <= limit) continue;
          const bool seen = std::any_of(cuts.begin(), cuts.end(), [&](const auto& c) { return c.first == argument; });
          if (!seen) cuts.emplace_back(argument, one_parameter(divisor_type(dtypes_[argument & ~kResultBit])));
        }
      }
      for (const auto& [argument, one] : cuts) {
        const uint32_t barrier = add_barrier(argument & ~kResultBit, one);
        recorded.barriers.push_back({barrier, argument & ~kResultBit, one});
        for (uint32_t& a : recorded.arguments) {
          if (a == argument) a = barrier | kResultBit;
        }
      }
    }
    std::vector<uint16_t> out;
    out.reserve(chains.size());
    for (const hlo::Builder::ResultChain& chain : chains) {
      int64_t run = chain.inside;
      for (const auto& [parameter, length] : chain.parameters) {
        run = std::max(run, run_of(recorded.arguments[parameter]) + length);
      }
      out.push_back(static_cast<uint16_t>(std::clamp<int64_t>(run, 0, std::numeric_limits<uint16_t>::max())));
    }
    return out;
  }

  // A graph's elementwise ops can also grow one kernel without end though
  // each is computed once: `x = x + torch.randn(n)` in a loop fuses every
  // step's sampling into the kernel of the last x, and LLVM's instruction
  // scheduler takes time quadratic in a kernel's size (100 steps: 39 s to
  // compile). An argument that would make the kernel of one of the op's
  // results larger than max_kernel() ops is therefore made a program
  // output when the graph runs (if a live result needs it): XLA computes it
  // in a kernel of its own, which this op and later ones read. Returns the
  // sizes of the kernels ending at the op's results that later ops' kernels
  // may take in.
  std::vector<uint32_t> limit_kernels(const RecordedOp& recorded, const std::vector<OpArgument>& arguments) {
    const std::vector<hlo::Builder::ResultKernel>& kernels = recorded.fragment->plain.flow.kernels;
    const int64_t limit = max_kernel();
    if (limit == 0) return std::vector<uint32_t>(kernels.size(), 0);  // nothing to bound
    counted_in_.resize(results_.size(), 0);
    seen_in_.resize(results_.size(), 0);
    shared_in_.resize(results_.size(), 0);
    const uint32_t op = ++op_stamp_;
    mark_arguments_several_results_read(recorded, op);
    std::vector<uint32_t> size = kernel_sizes(recorded, op);
    while (true) {
      // The largest argument kernel feeding an elementwise result over the
      // limit (a reduction's or a dot's kernel ends at it anyway).
      int largest = -1;
      uint32_t largest_size = 0;
      for (size_t r = 0; r < kernels.size(); ++r) {
        if (size[r] <= limit || kernels[r].ends) continue;
        for (int parameter : kernels[r].parameters) {
          const uint32_t s = argument_kernel(recorded.arguments[parameter], op);
          if (s > largest_size) {
            largest = parameter;
            largest_size = s;
          }
        }
      }
      if (largest < 0) break;  // the op alone is larger: nothing to cut
      cut_kernel_at(*arguments[largest].buffer);
      size = kernel_sizes(recorded, op);
    }
    // What later ops' kernels take in: nothing of a kernel that ends at
    // its result.
    for (size_t r = 0; r < kernels.size(); ++r) {
      if (kernels[r].ends) size[r] = 0;
    }
    for (uint32_t argument : recorded.arguments) {
      if (argument & kResultBit) read_[argument & ~kResultBit] = 1;
    }
    return size;
  }

  // Marks with stamp `op` in shared_in_ the arguments that the kernels of
  // several of the op's results take in.
  void mark_arguments_several_results_read(const RecordedOp& recorded, uint32_t op) {
    const std::vector<hlo::Builder::ResultKernel>& kernels = recorded.fragment->plain.flow.kernels;
    if (kernels.size() < 2) return;
    for (const hlo::Builder::ResultKernel& kernel : kernels) {
      ++count_stamp_;
      for (int parameter : kernel.parameters) {
        const uint32_t argument = recorded.arguments[parameter];
        if (!(argument & kResultBit)) continue;
        const uint32_t id = argument & ~kResultBit;
        if (counted_in_[id] == count_stamp_) continue;
        counted_in_[id] = count_stamp_;
        if (seen_in_[id] == op) shared_in_[id] = op;
        seen_in_[id] = op;
      }
    }
  }

  // What an argument's kernel adds to a consumer's. Where more than one
  // kernel reads it (an earlier op's, or another result's of op `op`),
  // XLA computes it once and its readers read the buffer, but for its run
  // of cheap ops, which XLA copies into each.
  uint32_t argument_kernel(uint32_t argument, uint32_t op) const {
    if (!(argument & kResultBit)) return 0;
    const uint32_t id = argument & ~kResultBit;
    const bool shared = read_[id] || shared_in_[id] == op;
    return shared ? std::min<uint32_t>(kernel_ops_[id], chains_[id]) : kernel_ops_[id];
  }

  // Each result's kernel: its own ops and the kernels of the arguments its
  // parameters are bound to, an argument bound to several counted once.
  std::vector<uint32_t> kernel_sizes(const RecordedOp& recorded, uint32_t op) {
    const std::vector<hlo::Builder::ResultKernel>& kernels = recorded.fragment->plain.flow.kernels;
    std::vector<uint32_t> out;
    out.reserve(kernels.size());
    for (const hlo::Builder::ResultKernel& kernel : kernels) {
      uint32_t size = static_cast<uint32_t>(kernel.ops);
      ++count_stamp_;
      for (int parameter : kernel.parameters) {
        const uint32_t argument = recorded.arguments[parameter];
        if (!(argument & kResultBit)) continue;
        uint32_t& counted = counted_in_[argument & ~kResultBit];
        if (counted == count_stamp_) continue;
        counted = count_stamp_;
        size = saturating_add(size, argument_kernel(argument, op));
      }
      out.push_back(size);
    }
    return out;
  }

  // Ends the kernel at `buffer`, one of the graph's results (and at its
  // barrier copy): run() makes it an output.
  void cut_kernel_at(const DeviceBufferPtr& buffer) {
    const uint32_t source = result_ids_.at(buffer.get());
    kernel_cuts_.push_back(source);
    kernel_ops_[source] = 0;
    if (barrier_of_[source] != kNoBarrier) kernel_ops_[barrier_of_[source]] = 0;
  }

  // The kernel cuts that live results are computed from and that are not
  // live themselves, in order: XLA would not compute the others at all.
  std::vector<uint32_t> needed_cuts() const {
    if (kernel_cuts_.empty()) return {};
    enum : char { kUnneeded, kNeeded, kLive };
    std::vector<char> state(results_.size(), kUnneeded);
    for (uint32_t r : live_results_) state[r] = kLive;
    auto need = [&](uint32_t r) {
      if (state[r] == kUnneeded) state[r] = kNeeded;
    };
    for (auto op = ops_.rbegin(); op != ops_.rend(); ++op) {
      const auto first = state.begin() + op->first_result;
      const auto count = static_cast<std::ptrdiff_t>(op->fragment->result_types().size());
      if (std::any_of(first, first + count, [](char s) { return s != kUnneeded; })) {
        for (uint32_t a : op->arguments) {
          if (a & kResultBit) need(a & ~kResultBit);
        }
      }
      // (Barriers made before this op may be read by it or by later ops.)
      for (const Barrier& barrier : op->barriers) {
        if (state[barrier.result] != kUnneeded) need(barrier.source);
      }
    }
    std::vector<uint32_t> out;
    for (uint32_t c : kernel_cuts_) {
      if (state[c] == kNeeded) out.push_back(c);
    }
    return out;
  }

  static uint32_t saturating_add(uint32_t a, uint32_t b) {
    return a > std::numeric_limits<uint32_t>::max() - b ? std::numeric_limits<uint32_t>::max() : a + b;
  }

  // The type of the 1 a barrier of `dtype` divides by (barrier_copy).
  static ElementType divisor_type(ElementType dtype) {
    if (is_complex(dtype)) return real_part_type(dtype);
    if (dtype == ElementType::kPred || is_float8(dtype)) return ElementType::kU8;
    return dtype;
  }

  // `x` divided by `one` (a runtime 1 of divisor_type): XLA can neither fold
  // the divide away nor copy it into consumers (a divide by a value it does
  // not know is expensive to it, in every type), so the run behind it is
  // computed once. Exact but for floating-point subnormals (flushed, as
  // the CPU plugin's arithmetic flushes them anyway) and signaling NaNs
  // (quieted). Complex values divide their parts; booleans go through u8;
  // 8-bit floats through their bits as u8 (XLA would divide them in f32).
  static hlo::Value barrier_copy(hlo::Builder& b, const hlo::Value& x, const hlo::Value& one) {
    auto divide_by_one = [&](const hlo::Value& v) { return b.divide(v, b.broadcast_in_dim(one, v.type().dims, {})); };
    const ElementType dtype = x.dtype();
    if (is_complex(dtype)) return b.complex(divide_by_one(b.real(x)), divide_by_one(b.imag(x)));
    if (dtype == ElementType::kPred) return b.convert(divide_by_one(b.convert(x, ElementType::kU8)), dtype);
    if (is_float8(dtype)) {
      const hlo::Value bits = b.bitcast_convert(x, hlo::TensorType(ElementType::kU8, x.type().dims));
      return b.bitcast_convert(divide_by_one(bits), x.type());
    }
    return divide_by_one(x);
  }

  // The barrier copy of `source`, a new value of the graph that later ops
  // bind to in its place (its run starts over).
  uint32_t add_barrier(uint32_t source, uint32_t one) {
    const auto barrier = static_cast<uint32_t>(results_.size());
    // (The divide and its broadcast join the source's kernel.)
    add_result(nullptr, dtypes_[source], 0, saturating_add(kernel_ops_[source], 2));
    barrier_of_[source] = barrier;
    append_id(key_, 'b', source);
    append_id(key_, 'o', one);
    ++barriers_;
    return barrier;
  }

  // The parameter holding a 1 of `dtype` that barriers divide by, added
  // on first use.
  uint32_t one_parameter(ElementType dtype) {
    for (const auto& [type, parameter] : ones_) {
      if (type == dtype) return parameter;
    }
    const ScalarInput one{dtype, c10::Scalar(1.0)};
    DeviceBufferPtr buffer = cached_scalar_buffer(device_, one);
    key_.push_back('1');
    const uint32_t parameter = add_parameter(buffer, &one);
    ones_.emplace_back(dtype, parameter);
    return parameter;
  }

  // A buffer's value inside the graph: an earlier op's result, or a
  // parameter (one per distinct buffer).
  uint32_t bind(const DeviceBufferPtr& buffer) {
    if (buffer->pending()) {
      if (buffer->source().get() == this) {
        uint32_t id = result_ids_.at(buffer.get());
        if (barrier_of_[id] != kNoBarrier) id = barrier_of_[id];
        append_id(key_, 'r', id);
        return id | kResultBit;
      }
      buffer->get();  // another graph's value: run that graph first
    }
    auto it = parameter_ids_.find(buffer.get());
    if (it != parameter_ids_.end()) {
      append_id(key_, 'p', it->second);
      return it->second;
    }
    append_id(key_, 'p', parameters_.size());
    parameter_ids_.emplace(buffer.get(), static_cast<uint32_t>(parameters_.size()));
    return add_parameter(buffer);
  }

  // `scalar`: the runtime scalar the buffer holds, if it is one. Returns
  // the parameter's index.
  uint32_t add_parameter(const DeviceBufferPtr& buffer, const ScalarInput* scalar = nullptr) {
    TORCH_INTERNAL_ASSERT(!buffer->pending());
    if (observed_) {
      RanGraph::Parameter origin;
      if (scalar) {
        origin.scalar = *scalar;
      } else {
        origin.buffer = buffer.get();
      }
      parameter_origins_.push_back(std::move(origin));
    }
    parameters_.push_back(buffer);
    parameter_types_.push_back(buffer->type());
    return static_cast<uint32_t>(parameters_.size() - 1);
  }

  std::vector<std::string> op_names() const { return {op_names_.begin(), op_names_.end()}; }

  // "tpu fused graph of 12 ops (aten::mm, aten::add, ...)" for messages.
  std::string describe() const {
    std::string text = "tpu fused graph of " + std::to_string(size()) + " ops (";
    for (size_t i = 0; i < op_names_.size() && i < 6; ++i) {
      if (i) text += ", ";
      text += op_names_[i];
    }
    if (op_names_.size() > 6) text += ", ...";
    return text + ")";
  }

  const Owner owner_;
  int last_pass_ = -1;
  const int device_;
  const bool observed_;  // a graph observer was set when the graph began
  std::string key_;
  std::vector<RecordedOp> ops_;
  std::vector<DeviceBufferPtr> parameters_;  // argument order; released at launch
  std::vector<hlo::TensorType> parameter_types_;  // kept for the text
  ska::flat_hash_map<const DeviceBuffer*, uint32_t> parameter_ids_;
  std::vector<std::weak_ptr<DeviceBuffer>> results_;  // every op's results in order, and barriers
  // Per result: its element type, the run of cheap ops ending at it
  // (limit_chains), and its barrier copy if it has one.
  std::vector<ElementType> dtypes_;
  std::vector<uint16_t> chains_;
  std::vector<uint32_t> barrier_of_;
  // Per result: how many elementwise ops XLA may fuse into the kernel
  // ending at it and whether an op read it (limit_kernels); the results
  // kernels were cut at, and those of them the program outputs (run()).
  std::vector<uint32_t> kernel_ops_;
  std::vector<char> read_;
  std::vector<uint32_t> kernel_cuts_;
  std::vector<uint32_t> cut_outputs_;
  // limit_kernels' marks, by result: counted in the kernel whose stamp
  // (count_stamp_) it holds; read by one, and by several, of the results
  // of the op whose stamp (op_stamp_) it holds.
  std::vector<uint32_t> counted_in_, seen_in_, shared_in_;
  uint32_t count_stamp_ = 0, op_stamp_ = 0;
  std::vector<std::pair<ElementType, uint32_t>> ones_;  // (dtype, parameter) barriers divide by
  int64_t barriers_ = 0;
  // Pending buffers of this graph -> their index in results_. An entry may
  // outlive its buffer; bind() checks that a buffer is still pending on
  // this graph before trusting it, and a new result at a reused address
  // overwrites the entry.
  ska::flat_hash_map<const DeviceBuffer*, uint32_t> result_ids_;
  std::vector<std::pair<uint32_t, uint32_t>> overwrites_;  // (parameter, result)
  std::vector<std::pair<int64_t, int64_t>> aliases_;  // (parameter, output), once run
  // While observed: where each parameter came from.
  std::vector<RanGraph::Parameter> parameter_origins_;
  std::vector<const char*> op_names_;
  // Shape churn's view of the graph (shape_churn.h): whether it takes part
  // (churn handling on, and not a torch.compile graph or a capture, which
  // stay whole), its structure so far, and per op its position and its
  // key's hash (kept only when it takes part).
  const bool churn_tracked_;
  uint64_t structure_;
  std::vector<uint64_t> positions_;
  std::vector<uint64_t> op_key_hashes_;
  std::vector<std::string> descriptions_;  // while recompiles are explained
  std::vector<uint32_t> live_results_;       // the program's outputs, once run
  bool built_ = false;
  std::string text_;
  bool ran_ = false;
  std::string error_;
};

}  // namespace

const char* materialize_reason_name(MaterializeReason reason) {
  switch (reason) {
    case MaterializeReason::kRead: return "read";
    case MaterializeReason::kSynchronize: return "synchronize";
    case MaterializeReason::kSizeLimit: return "size_limit";
    case MaterializeReason::kModeSwitch: return "mode_switch";
    case MaterializeReason::kExplicit: return "explicit";
    case MaterializeReason::kBackwardStart: return "start_of_backward";
    case MaterializeReason::kBackward: return "end_of_backward";
    case MaterializeReason::kThreadEnd: return "thread_end";
    case MaterializeReason::kShapeChurn: return "shape_churn";
    case MaterializeReason::kCount: break;
  }
  return "?";
}

namespace {

thread_local bool t_own_graphs_only = false;

// The graph an op joins: in a backward pass, that of its first input still
// pending in an open graph on the device (or, for an op with none, the one
// the pass's previous op joined); elsewhere the thread's own.
Owner recording_owner(int task, int device, const std::vector<Operand>& operands) {
  if (task < 0 || t_own_graphs_only) return this_thread_owner();
  // The owner each recent pass joined: the device thread interleaves the
  // passes of several threads.
  thread_local std::array<std::pair<int, Owner>, 8> joined{};
  thread_local size_t next_slot = 0;
  for (const Operand& operand : operands) {
    if (!operand.buffer || !operand.buffer->pending()) continue;
    const auto* graph = dynamic_cast<const DeferredGraph*>(operand.buffer->source().get());
    if (graph && graph->device() == device && !graph->ran()) {
      for (auto& [pass, owner] : joined) {
        if (pass == task + 1) {
          owner = graph->owner();
          return owner;
        }
      }
      joined[next_slot] = {task + 1, graph->owner()};  // task + 1: a zero entry is free
      next_slot = (next_slot + 1) % joined.size();
      return graph->owner();
    }
  }
  for (const auto& [pass, owner] : joined) {
    if (pass == task + 1) return owner;
  }
  // While a device graph capture records, a pass with no pending input
  // (torch.autograd.grad of outputs the capture's start computed) is the
  // capture's too.
  const Owner captured = detail::capture_owner.load(std::memory_order_acquire);
  return captured != 0 ? captured : pass_owner(task);
}

// Runs the graphs that ended threads left open.
void run_ended_owners() {
  if (!g_owners_ended.load(std::memory_order_acquire)) return;
  std::vector<Owner> ended;
  {
    std::lock_guard<std::mutex> lock(g_ended_mutex);
    ended.swap(g_ended_owners);
    g_owners_ended.store(false, std::memory_order_relaxed);
  }
  for (Owner owner : ended) {
    try {
      materialize_owner(owner, MaterializeReason::kThreadEnd);
    } catch (const std::exception&) {
      // The failure is the ended thread's, not the running op's: its
      // results keep it, and whoever reads them gets it.
    }
  }
}

}  // namespace

std::vector<DeviceBufferPtr> record_op(int device, const char* op, const std::string& op_key,
                                       const std::vector<Operand>& operands, const std::vector<OpArgument>& arguments,
                                       EmitOpAlone emit, const std::function<std::string()>& describe) {
  runtime::ValuesLock lock;
  run_ended_owners();
  // The engine sets the graph task on the threads that run a backward
  // pass; elsewhere the id is -1.
  const int task = torch::autograd::get_current_graph_task_id();
  const Owner owner = recording_owner(task, device, operands);
  std::shared_ptr<DeferredGraph> graph = open_graph(owner, device);
  // A device graph capture keeps its ops in one graph, whatever its size
  // and wherever backward passes begin and end.
  const bool captured = is_capture_owner(owner);
  if (graph && !captured && task >= 0 && graph->last_pass() != task && graph->size() > 0 &&
      split_at_backward_start()) {
    // A backward pass begins on a graph recorded before it (the forward):
    // launch that now, so the device computes the forward while the host
    // records the backward, which then becomes a graph of its own.
    graph->run(MaterializeReason::kBackwardStart);
    graph.reset();
  }
  if (graph && !captured && graph->values() >= max_ops()) {
    graph->run(MaterializeReason::kSizeLimit);  // leaves the slot empty
    graph.reset();
  }
  if (!graph) {
    graph = std::make_shared<DeferredGraph>(owner, device, take_carried_structure(owner));
    open_graph(owner, device) = graph;
  }
  stats().ops_recorded++;
  if (task >= 0 && !captured) cut_at_end_of_backward(task, owner);
  graph->set_last_pass(task);
  return graph->record(op, op_key, arguments, emit, describe);
}

bool run_alone_for_shape_churn(int device, const char* op, const std::vector<Operand>& operands) {
  if (!shape_churn::any_marked() || capture_recording() || thread_has_own_eager_mode()) return false;
  runtime::ValuesLock lock;
  const int task = torch::autograd::get_current_graph_task_id();
  const Owner owner = recording_owner(task, device, operands);
  // The position the op would take: after the ops of its owner's open
  // graph, or those before the cut that ended the last one.
  auto open_of = [&]() -> DeferredGraph* {
    auto open = open_graphs().find(owner);
    return open != open_graphs().end() ? open->second[device].get() : nullptr;
  };
  uint64_t structure = shape_churn::kEmpty;
  if (DeferredGraph* open = open_of()) {
    structure = open->structure();
  } else if (auto carried = carried_structures().find(owner); carried != carried_structures().end()) {
    structure = carried->second;
  }
  const uint64_t position = shape_churn::after(structure, op);
  if (!shape_churn::marked(position)) return false;
  stats().shape_churn_ops++;
  for (const Operand& operand : operands) {
    if (!operand.buffer || !operand.buffer->pending()) continue;
    auto graph = std::dynamic_pointer_cast<DeferredGraph>(operand.buffer->source());
    if (graph) graph->run(MaterializeReason::kShapeChurn);
  }
  // The ops after it take the positions they had while it was recorded.
  if (DeferredGraph* open = open_of()) {
    open->set_structure(position);
  } else {
    carried_structures()[owner] = position;
  }
  return true;
}

void end_op_sequence() {
  if (!shape_churn::any_marked()) return;
  runtime::ValuesLock lock;
  carried_structures().erase(this_thread_owner());
}

void record_into_own_graphs(bool on) { t_own_graphs_only = on; }

void note_overwrite(const DeviceBufferPtr& old, const DeviceBufferPtr& now) {
  runtime::ValuesLock lock;
  auto* graph = dynamic_cast<DeferredGraph*>(now->source().get());
  if (graph && !graph->ran()) graph->overwrite(old, now);
}

int64_t graphs_run_total() { return runs_total.load(); }

bool set_graph_observer(GraphObserver observer) {
  runtime::ValuesLock lock;
  if (observer && graph_observer()) return false;
  graph_observer() = std::move(observer);
  return true;
}

namespace {

void run_graphs(const Owner* owner, MaterializeReason reason) {
  runtime::ValuesLock lock;
  // A sync point, whether or not a graph is open.
  if (owner) {
    carried_structures().erase(*owner);
  } else {
    carried_structures().clear();
  }
  std::vector<std::shared_ptr<DeferredGraph>> pending = graphs_of(owner);
  if (pending.empty()) return;
  // Graphs run outside any op (the end of backward, synchronize,
  // materialize(), a mode switch) get a profiler range of their own, so
  // the profilers charge their device time to it rather than to nothing.
  // A graph that a read runs is charged to the reading op.
  std::optional<at::RecordFunction> range;
  if (reason != MaterializeReason::kRead && reason != MaterializeReason::kSizeLimit) {
    range.emplace(at::RecordScope::USER_SCOPE);
    if (range->isActive()) range->before("tpu::fused_graph", c10::ArrayRef<const c10::IValue>{});
  }
  for (const auto& graph : pending) {
    // Another thread's synchronize leaves a capture's graphs pending; the
    // capturing thread's raises (DeferredGraph::run).
    if (is_capture_owner(graph->owner()) && !g_capture_finishing && g_capture_thread != std::this_thread::get_id()) {
      continue;
    }
    graph->run(reason);
  }
}

}  // namespace

void materialize_all(MaterializeReason reason) { run_graphs(nullptr, reason); }

void materialize_owner(uint64_t owner, MaterializeReason reason) { run_graphs(&owner, reason); }

void materialize_this_thread(MaterializeReason reason) {
  run_ended_owners();
  const Owner owner = this_thread_owner();
  run_graphs(&owner, reason);
}

void synchronize_device(int device) {
  materialize_all(MaterializeReason::kSynchronize);
  try {
    runtime::synchronize(device);
  } catch (const pjrt::PjrtError& e) {
    raise_device_error("torch.tpu.synchronize: a tpu program", e, device);
  }
}

std::string last_graph_text() {
  runtime::ValuesLock lock;
  return last_graph() ? last_graph()->last_text() : std::string();
}

FusedStats fused_stats() {
  runtime::ValuesLock lock;
  return stats();
}

void count_graph_replayed() {
  runtime::ValuesLock lock;
  stats().graphs_replayed++;
}

void reset_fused_stats() {
  runtime::ValuesLock lock;
  stats() = FusedStats();
}

namespace {

[[noreturn]] void refuse_capture_run(MaterializeReason reason) {
  std::string what;
  switch (reason) {
    case MaterializeReason::kRead:
      what = "reads the value of a captured op (a copy to the host: item(), .cpu(), print; or an op that cannot be "
             "deferred, whose result's size depends on values)";
      break;
    case MaterializeReason::kSynchronize: what = "synchronizes the device"; break;
    case MaterializeReason::kModeSwitch: what = "switches the eager mode"; break;
    default: what = std::string("runs the captured ops (") + materialize_reason_name(reason) + ")"; break;
  }
  std::string message = "tpu graph capture: the captured code " + what +
                        "; a captured graph runs only when replayed, so nothing inside the capture can wait for its "
                        "results. Move this out of the captured region.";
  if (g_capture_refusal.empty()) g_capture_refusal = message;
  TORCH_CHECK(false, message);
}

}  // namespace

bool begin_capture_recording() {
  materialize_this_thread(MaterializeReason::kExplicit);
  runtime::ValuesLock lock;
  if (detail::capture_owner.load(std::memory_order_relaxed) != 0) return false;
  g_capture_thread = std::this_thread::get_id();
  g_capture_finishing = false;
  g_capture_refusal.clear();
  detail::capture_owner.store(this_thread_owner(), std::memory_order_release);
  return true;
}

void finish_capture_recording() {
  runtime::ValuesLock lock;
  const Owner owner = detail::capture_owner.load(std::memory_order_relaxed);
  TORCH_INTERNAL_ASSERT(owner != 0);
  struct End {
    ~End() {
      g_capture_finishing = false;
      detail::capture_owner.store(0, std::memory_order_release);
    }
  } end;
  g_capture_finishing = true;
  run_graphs(&owner, MaterializeReason::kExplicit);
}

bool capturing_thread() {
  if (!capture_recording()) return false;
  runtime::ValuesLock lock;
  return capture_recording() && g_capture_thread == std::this_thread::get_id();
}

bool pending_in_capture(const runtime::DeviceBuffer& buffer) {
  if (!capture_recording() || !buffer.pending()) return false;
  const auto* graph = dynamic_cast<const DeferredGraph*>(buffer.source().get());
  return graph && !graph->ran() && is_capture_owner(graph->owner());
}

std::string capture_refusal() {
  runtime::ValuesLock lock;
  return g_capture_refusal;
}

}  // namespace torch_tpu::aten
