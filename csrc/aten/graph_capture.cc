#include "aten/graph_capture.h"

#include <c10/core/Storage.h>
#include <c10/core/TensorImpl.h>
#include <c10/util/Exception.h>

#include <atomic>
#include <mutex>
#include <sstream>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "aten/allocator.h"
#include "aten/captured_program.h"
#include "aten/device_graph.h"
#include "aten/device_scope.h"
#include "aten/fused_graph.h"
#include "aten/op_runner.h"

namespace torch_tpu::aten {

using runtime::DeviceBuffer;
using runtime::DeviceBufferPtr;

// ---- what a capture observes ---------------------------------------------

struct CaptureLog {
  struct Check {
    const DeviceBuffer* flag;
    CheckError error;
    std::string message;
  };
  std::thread::id thread = std::this_thread::get_id();
  std::vector<RanGraph> graphs;
  std::vector<RandomDraw> draws;
  std::vector<Check> checks;
  int64_t host_reads = 0;
};

namespace {

std::mutex& log_mutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}
CaptureLog* active_log = nullptr;  // guarded by log_mutex()
std::atomic<bool> capturing{false};

// The active log, when the calling thread is the capturing one. Ops of
// other threads are not part of the captured call.
template <typename F>
void with_active_log(F&& f) {
  if (!capturing.load(std::memory_order_acquire)) return;
  std::lock_guard<std::mutex> lock(log_mutex());
  if (active_log && active_log->thread == std::this_thread::get_id()) f(*active_log);
}

}  // namespace

void note_random_draw(const at::Generator& generator, uint64_t seed, uint64_t offset, uint64_t increment) {
  with_active_log([&](CaptureLog& log) { log.draws.push_back({generator, seed, offset, increment}); });
  note_graph_draw(generator, seed, offset, increment);
}

void note_deferred_check(const DeviceBuffer* flag, CheckError error, const std::string& message) {
  with_active_log([&](CaptureLog& log) { log.checks.push_back({flag, error, message}); });
  note_graph_check(flag, error, message);
}

void note_host_read() {
  check_graph_host_read();
  with_active_log([](CaptureLog& log) { log.host_reads++; });
}

// ---- what a replay needs -----------------------------------------------------

struct CapturedGraph {
  // An input as the capture saw it. Inputs sharing a storage (or, through
  // a clone, a device value) point to the first one of their group.
  struct Input {
    c10::ScalarType dtype;
    c10::DeviceIndex device;
    std::vector<int64_t> sizes, strides;
    int64_t offset;
    size_t storage_nbytes;
    std::optional<hlo::TensorType> value_type;  // none: a storage never written
    int32_t storage_group;
    int32_t value_group;  // -1 without a value
  };
  // An input's storage takes a result as its new value.
  struct Update {
    int32_t input, result;
  };
  struct Output {
    int32_t same_tensor_as = -1;   // the very tensor of an earlier output
    int32_t input_tensor = -1;     // the very tensor of an input
    int32_t input = -1;            // a view of this input's storage
    int32_t result = -1;           // a view of a new storage holding this result
    int32_t same_storage_as = -1;  // a view of an earlier output's new storage
    c10::ScalarType dtype = c10::kFloat;
    std::vector<int64_t> sizes, strides;
    int64_t offset = 0;
    size_t storage_nbytes = 0;  // of the new storage (result >= 0, or a storage never written)
  };
  struct Check {
    int32_t result;
    CheckError error;
    std::string message;
  };

  // Its values are the inputs' (by index); a donation's owner is the
  // input whose storage takes a new value.
  CapturedProgram program;
  std::vector<Input> inputs;
  std::vector<Update> updates;
  std::vector<Output> outputs;
  std::vector<Check> checks;
};

namespace {

using Captured = CapturedGraph;

c10::StorageImpl* storage_of(const at::Tensor& t) { return t.storage().unsafeGetStorageImpl(); }

DeviceBufferPtr value_of(const at::Tensor& t) { return storage_value(t.storage()).value(); }

bool is_tpu(const at::Tensor& t) { return t.defined() && t.device().type() == c10::DeviceType::PrivateUse1; }

at::Tensor tensor_on(c10::Storage storage, const Captured::Output& o) {
  at::Tensor t = at::detail::make_tensor<c10::TensorImpl>(
      std::move(storage), c10::DispatchKeySet(c10::DispatchKey::PrivateUse1), c10::scalarTypeToTypeMeta(o.dtype));
  t.unsafeGetTensorImpl()->set_sizes_and_strides(o.sizes, o.strides, o.offset);
  return t;
}

c10::Storage new_storage(size_t nbytes, int device, DeviceBufferPtr value) {
  CurrentDeviceScope scope(device);
  c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes, tpu_allocator(), /*resizable=*/true);
  if (value) storage_value(storage).set_value(std::move(value));
  return storage;
}

void write_dims(std::ostringstream& out, c10::IntArrayRef dims) {
  out << '[';
  for (int64_t d : dims) out << d << ',';
  out << ']';
}

}  // namespace

// ---- capture ---------------------------------------------------------------

GraphCapture::GraphCapture(const std::vector<at::Tensor>& inputs)
    : inputs_(inputs), log_(std::make_unique<CaptureLog>()), graph_(std::make_shared<CapturedGraph>()) {
  materialize_this_thread(MaterializeReason::kExplicit);
  std::unordered_map<const c10::StorageImpl*, int32_t> storages;
  std::unordered_map<const DeviceBuffer*, int32_t> values;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const at::Tensor& t = inputs_[i];
    if (!is_tpu(t) || t.is_conj() || t.is_neg()) {
      failure_ = "input " + std::to_string(i) + " is not a plain tpu tensor";
      return;
    }
    Captured::Input in;
    in.dtype = t.scalar_type();
    in.device = t.device().index();
    in.sizes = t.sizes().vec();
    in.strides = t.strides().vec();
    in.offset = t.storage_offset();
    in.storage_nbytes = t.storage().nbytes();
    const auto index = static_cast<int32_t>(i);
    in.storage_group = storages.emplace(storage_of(t), index).first->second;
    DeviceBufferPtr value = value_of(t);
    // An input pending in another thread's graph (a backward pass's
    // gradient, recorded by the thread that called backward) is computed
    // now, not in the middle of the call.
    if (value && value->pending()) value->get();
    in.value_group = value ? values.emplace(value.get(), index).first->second : -1;
    start_storages_.push_back(storage_of(t));
    start_values_.push_back(value.get());
    start_refs_.push_back(value);
    if (value) in.value_type = value->type();
    graph_->inputs.push_back(std::move(in));
  }
  graphs_run_ = graphs_run_total();
  {
    std::lock_guard<std::mutex> lock(log_mutex());
    if (active_log) {
      failure_ = "another graph capture is running";
      transient_ = true;
      return;
    }
    active_log = log_.get();  // claimed; the hooks log once `capturing` is set
  }
  CaptureLog* log = log_.get();
  bool observing = false;
  try {
    // Graphs another thread runs meanwhile are not part of the call.
    observing = set_graph_observer([log](RanGraph graph) {
      if (std::this_thread::get_id() == log->thread) log->graphs.push_back(std::move(graph));
    });
  } catch (...) {
    std::lock_guard<std::mutex> lock(log_mutex());
    active_log = nullptr;
    throw;
  }
  if (!observing) {  // a device graph capture (device_graph.h) is observing
    std::lock_guard<std::mutex> lock(log_mutex());
    active_log = nullptr;
    failure_ = "a tpu graph capture is running";
    transient_ = true;
    return;
  }
  active_ = true;
  record_into_own_graphs(true);
  capturing.store(true, std::memory_order_release);
}

GraphCapture::~GraphCapture() { stop(); }

void GraphCapture::stop() {
  if (!active_) return;
  active_ = false;
  if (std::this_thread::get_id() == log_->thread) record_into_own_graphs(false);
  {
    std::lock_guard<std::mutex> lock(log_mutex());
    capturing.store(false, std::memory_order_release);
    active_log = nullptr;
  }
  set_graph_observer(nullptr);
}

void GraphCapture::abandon() {
  stop();
  if (failure_.empty()) failure_ = "the call failed";
}

void GraphCapture::finish(const std::vector<at::Tensor>& outputs) {
  if (!active_) {
    if (failure_.empty()) failure_ = "the capture was not running";
    finished_ = true;
    return;
  }
  if (graphs_run_total() != graphs_run_) {
    // Perhaps another thread's graph; perhaps an op of the call that cannot
    // be deferred, which the next capture will meet again.
    failure_ = "a fused graph ran before the call's end (a sync point inside the graph, or another thread)";
    transient_ = true;
  }
  materialize_this_thread(MaterializeReason::kExplicit);
  stop();
  finished_ = true;
  if (failure_.empty() && log_->host_reads) failure_ = "the call copied a device value to the host";
  if (failure_.empty()) {
    try {
      analyse(outputs);
    } catch (const std::exception& e) {
      // The call itself succeeded; only its replay is off.
      failure_ = std::string("the capture failed: ") + e.what();
    }
  }
  log_.reset();
  if (!failure_.empty()) graph_.reset();
}

std::shared_ptr<ReplayPlan> GraphCapture::plan() const {
  TORCH_CHECK(finished_ && failure_.empty(), "this graph capture cannot be replayed: ",
              finished_ ? failure_ : std::string("it has not finished"));
  return std::make_shared<ReplayPlan>(graph_);
}

void GraphCapture::analyse(const std::vector<at::Tensor>& outputs) {
  Captured& g = *graph_;
  auto fail = [this](std::string why) { failure_ = std::move(why); };
  if (log_->graphs.size() > 1) {
    return fail("the call ran " + std::to_string(log_->graphs.size()) +
                " programs, not one (an op that cannot be deferred, or the fused graph size limit)");
  }

  // The inputs keep their storages and layouts (no set_, no in-place
  // transpose): a replay only writes storages.
  std::unordered_map<const c10::StorageImpl*, int32_t> input_storages;
  std::unordered_map<const c10::TensorImpl*, int32_t> input_tensors;
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const at::Tensor& t = inputs_[i];
    const Captured::Input& in = g.inputs[i];
    if (storage_of(t) != start_storages_[i] || t.sizes() != c10::IntArrayRef(in.sizes) ||
        t.strides() != c10::IntArrayRef(in.strides) || t.storage_offset() != in.offset) {
      return fail("input " + std::to_string(i) + " was given another storage or layout by the call");
    }
    input_storages.emplace(storage_of(t), static_cast<int32_t>(i));
    input_tensors.emplace(t.unsafeGetTensorImpl(), static_cast<int32_t>(i));
  }

  // Where the program's arguments came from, and where its results went.
  std::unordered_map<const DeviceBuffer*, int32_t> results;
  std::vector<DeviceBufferPtr> alive;
  std::vector<std::pair<int64_t, int64_t>> aliases;
  if (!log_->graphs.empty()) {
    RanGraph& ran = log_->graphs[0];
    aliases = ran.aliases;
    for (size_t r = 0; r < ran.results.size(); ++r) {
      DeviceBufferPtr result = ran.results[r].lock();
      if (!result) continue;  // computed, then dropped: nothing to do with it
      results.emplace(result.get(), static_cast<int32_t>(r));
      alive.push_back(std::move(result));
    }
    // The inputs' values at the start, by identity: the weak references in
    // the graph's parameters are gone, but a value still held by an input's
    // storage or by the fused graph until it ran cannot have been reused.
    std::unordered_map<const DeviceBuffer*, int32_t> input_values;
    for (size_t i = 0; i < g.inputs.size(); ++i) {
      if (g.inputs[i].value_group == static_cast<int32_t>(i)) input_values.emplace(start_values_[i], i);
    }
    const std::string untraced = trace_program(
        ran, log_->draws,
        [&](const DeviceBuffer* buffer) {
          auto it = input_values.find(buffer);
          return it == input_values.end() ? -1 : it->second;
        },
        &g.program, &signature_);
    if (!untraced.empty()) return fail(untraced + " (not one of the graph's inputs)");
  }

  std::vector<bool> accounted(g.program.n_results);
  auto result_of = [&](const DeviceBufferPtr& value) -> int32_t {
    if (!value) return -1;
    auto it = results.find(value.get());
    if (it == results.end()) return -1;
    accounted[it->second] = true;
    return it->second;
  };

  // Inputs whose storage took a new value: the graph's input updates.
  for (size_t i = 0; i < inputs_.size(); ++i) {
    const Captured::Input& in = g.inputs[i];
    if (in.storage_group != static_cast<int32_t>(i)) continue;
    if (inputs_[i].storage().nbytes() != in.storage_nbytes) return fail("input " + std::to_string(i) + " was resized");
    DeviceBufferPtr now = value_of(inputs_[i]);
    if (now.get() == start_values_[i]) continue;
    const int32_t r = result_of(now);
    if (r < 0) return fail("input " + std::to_string(i) + "'s storage took a value the program did not compute");
    g.updates.push_back({static_cast<int32_t>(i), r});
  }
  // Each aliased argument is an input's old value; it can be donated when
  // that input's storage takes a new value (the fused graph decided by who
  // held it then; a replay decides the same way).
  for (const auto& [arg, result] : aliases) {
    const CapturedProgram::Argument& a = g.program.args.at(arg);
    if (a.kind != CapturedProgram::Argument::Kind::kValue) {
      return fail("the program reuses the memory of a scalar argument");
    }
    CapturedProgram::Donation d{static_cast<int32_t>(arg), -1};
    for (const Captured::Update& u : g.updates) {
      if (g.inputs[u.input].value_group == a.index) d.owner = u.input;
    }
    g.program.donations.push_back(d);
  }

  // The outputs: views of inputs, of results, or of storages never written.
  std::unordered_map<const c10::TensorImpl*, int32_t> tensors;
  std::unordered_map<const c10::StorageImpl*, int32_t> new_storages;
  for (size_t j = 0; j < outputs.size(); ++j) {
    const at::Tensor& t = outputs[j];
    if (!is_tpu(t) || t.is_conj() || t.is_neg()) return fail("output " + std::to_string(j) + " is not a plain tpu tensor");
    Captured::Output o;
    const auto index = static_cast<int32_t>(j);
    auto same = tensors.emplace(t.unsafeGetTensorImpl(), index);
    if (!same.second) {
      o.same_tensor_as = same.first->second;
      g.outputs.push_back(std::move(o));
      continue;
    }
    auto input_tensor = input_tensors.find(t.unsafeGetTensorImpl());
    if (input_tensor != input_tensors.end()) {
      o.input_tensor = input_tensor->second;
      g.outputs.push_back(std::move(o));
      continue;
    }
    o.dtype = t.scalar_type();
    o.sizes = t.sizes().vec();
    o.strides = t.strides().vec();
    o.offset = t.storage_offset();
    o.storage_nbytes = t.storage().nbytes();
    auto input = input_storages.find(storage_of(t));
    if (input != input_storages.end()) {
      o.input = g.inputs[input->second].storage_group;
    } else {
      auto shared = new_storages.emplace(storage_of(t), index);
      if (!shared.second) {
        o.same_storage_as = shared.first->second;
      } else {
        DeviceBufferPtr value = value_of(t);
        o.result = result_of(value);
        if (value && o.result < 0) {
          return fail("output " + std::to_string(j) + " holds a device value the program did not compute");
        }
      }
    }
    g.outputs.push_back(std::move(o));
  }
  for (const CaptureLog::Check& c : log_->checks) {
    auto it = results.find(c.flag);
    if (it == results.end()) return fail("a deferred check's flag is not a result of the program");
    accounted[it->second] = true;
    g.checks.push_back({it->second, c.error, c.message});
  }
  for (const DeviceBufferPtr& result : alive) {
    const int32_t r = results.at(result.get());
    if (!accounted[r]) {
      return fail("result " + std::to_string(r) +
                  " of the program is held by something other than the graph's outputs and inputs");
    }
  }

  // The signature: everything above, in text.
  std::ostringstream out;
  const CapturedProgram& p = g.program;
  out << p.device << '|' << p.key.size() << ':' << p.key << '|' << p.n_results << '|';
  for (const Captured::Input& in : g.inputs) {
    out << 'i' << static_cast<int>(in.dtype) << ',' << in.device << ',' << in.offset << ',' << in.storage_nbytes << ','
        << in.storage_group << ',' << in.value_group << ',' << (in.value_type ? in.value_type->to_string() : "-");
    write_dims(out, in.sizes);
    write_dims(out, in.strides);
  }
  for (const CapturedProgram::Argument& a : p.args) out << 'a' << static_cast<int>(a.kind) << ',' << a.index << ';';
  for (const CapturedProgram::Draw& d : p.draws) {
    out << 'd' << d.generator.unsafeGetGeneratorImpl() << ',' << d.increment << ';';
  }
  for (const Captured::Update& u : g.updates) out << 'u' << u.input << ',' << u.result << ';';
  for (const CapturedProgram::Donation& d : p.donations) out << 'D' << d.arg << ',' << d.owner << ';';
  for (const Captured::Output& o : g.outputs) {
    out << 'o' << o.same_tensor_as << ',' << o.input_tensor << ',' << o.input << ',' << o.result << ','
        << o.same_storage_as << ','
        << static_cast<int>(o.dtype) << ',' << o.offset << ',' << o.storage_nbytes;
    write_dims(out, o.sizes);
    write_dims(out, o.strides);
  }
  for (const Captured::Check& c : g.checks) out << 'c' << c.result << ',' << static_cast<int>(c.error) << ',' << c.message << ';';
  signature_ += out.str();
}

// ---- replay ------------------------------------------------------------------

ReplayPlan::ReplayPlan(std::shared_ptr<const CapturedGraph> graph) : graph_(std::move(graph)) {}

std::optional<std::vector<at::Tensor>> ReplayPlan::replay(const std::vector<at::Tensor>& inputs) const {
  // Reads, donates and replaces its inputs' values as an op does.
  runtime::ValuesLock lock;
  const Captured& g = *graph_;
  const size_t n = inputs.size();
  if (n != g.inputs.size()) return std::nullopt;

  // The inputs must look as they did: layouts, and storages and values
  // shared the same way.
  std::vector<c10::StorageImpl*> storages(n);
  std::vector<DeviceBufferPtr> values(n);
  std::unordered_set<const c10::StorageImpl*> distinct_storages;
  std::unordered_set<const DeviceBuffer*> distinct_values;
  for (size_t i = 0; i < n; ++i) {
    const at::Tensor& t = inputs[i];
    const Captured::Input& in = g.inputs[i];
    if (!is_tpu(t) || t.device().index() != in.device || t.scalar_type() != in.dtype || t.is_conj() ||
        t.is_neg() || t.storage_offset() != in.offset || t.sizes() != c10::IntArrayRef(in.sizes) ||
        t.strides() != c10::IntArrayRef(in.strides) || t.storage().nbytes() != in.storage_nbytes) {
      return std::nullopt;
    }
    storages[i] = storage_of(t);
    if (in.storage_group != static_cast<int32_t>(i)) {
      if (storages[i] != storages[in.storage_group]) return std::nullopt;
      continue;
    }
    if (!distinct_storages.insert(storages[i]).second) return std::nullopt;
    values[i] = value_of(t);
    if (static_cast<bool>(values[i]) != in.value_type.has_value()) return std::nullopt;
    if (!values[i]) continue;
    if (!(values[i]->type() == *in.value_type)) return std::nullopt;
    if (in.value_group != static_cast<int32_t>(i)) {
      if (values[i] != values[in.value_group]) return std::nullopt;
    } else if (!distinct_values.insert(values[i].get()).second) {
      return std::nullopt;
    }
  }

  // An updated input's old value is donated when only its storage and
  // this call hold it (a clone sharing it keeps it).
  std::vector<DeviceBufferPtr> results = g.program.launch(
      std::move(values), [&](int32_t input) { storage_value(*storages[input]).set_value(nullptr); });
  count_graph_replayed();

  for (const Captured::Update& u : g.updates) storage_value(*storages[u.input]).set_value(results[u.result]);
  for (const Captured::Check& c : g.checks) {
    defer_check(tensor_from_value(results[c.result], c10::Device(c10::DeviceType::PrivateUse1, g.program.device)),
                c.error, c.message);
  }
  std::vector<at::Tensor> outputs;
  outputs.reserve(g.outputs.size());
  for (const Captured::Output& o : g.outputs) {
    if (o.same_tensor_as >= 0) {
      outputs.push_back(outputs[o.same_tensor_as]);
    } else if (o.input_tensor >= 0) {
      outputs.push_back(inputs[o.input_tensor]);
    } else if (o.input >= 0) {
      // A view of an input shares its version counter, as the op that made
      // it did (autograd checks saved tensors with it).
      const at::Tensor& base = inputs[o.input];
      outputs.push_back(base.scalar_type() == o.dtype ? base.as_strided(o.sizes, o.strides, o.offset)
                                                      : tensor_on(base.storage(), o));
    } else if (o.same_storage_as >= 0) {
      outputs.push_back(tensor_on(outputs[o.same_storage_as].storage(), o));
    } else {
      DeviceBufferPtr value = o.result >= 0 ? results[o.result] : nullptr;
      outputs.push_back(tensor_on(new_storage(o.storage_nbytes, g.program.device, std::move(value)), o));
    }
  }
  return outputs;
}

}  // namespace torch_tpu::aten
